"""The poisoning rules: shapes of attack, each with lexicons for several languages.

``injection`` rules aim at the system itself (its instructions, prompt,
safeguards, or data sent out); ``directive`` rules give standing orders or
authority. Patterns run on folded text (see ``graphmem.policy.text``).
"""

# ruff: noqa: RUF001  (Cyrillic and CJK words are the point of this module)

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

from graphmem.policy.lexicon import (
    BEFORE,
    DISREGARD,
    DISREGARDED,
    ENDPOINTS,
    EVERYTHING,
    EXFIL_VERB_RE,
    GIVEN_TO_YOU,
    POST_PRIOR,
    PRIOR,
    RULES_NOUN,
    SENSITIVE_RE,
    VOIDED,
    cjk,
    gap,
)
from graphmem.policy.prefilter import Prefiltered

__all__ = ["RULES", "TEMPLATED_URL", "Rule", "RuleClass"]

RuleClass = Literal["injection", "directive"]


@dataclass(frozen=True)
class Rule:
    """A named attack shape: an alternation of regexes; ``check`` (if any) confirms each match in context.

    ``pattern`` is the whole alternation (the reference); ``matcher`` runs on a
    text only the alternatives whose necessary literals it contains, with the
    same matches (see ``graphmem.policy.prefilter``).
    """

    name: str
    klass: RuleClass
    alternatives: tuple[str, ...]
    check: Callable[[re.Match[str], str], bool] | None = None
    matcher: Prefiltered = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", Prefiltered(self.alternatives, re.M, screen="text"))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return self.matcher.pattern


def _rule(name: str, klass: RuleClass, *alternatives: str) -> Rule:
    return Rule(name, klass, alternatives)


def _exfil_check(m: re.Match[str], text: str) -> bool:
    window = text[max(0, m.start() - 240) : m.end() + 80]
    return bool(EXFIL_VERB_RE.search(window) and SENSITIVE_RE.search(window))


RULES: tuple[Rule, ...] = (
    _rule(
        "override_instructions",
        "injection",
        rf"\b{DISREGARD}{gap(6)}{PRIOR}\b{gap(3)}{RULES_NOUN}\b",
        rf"\b{DISREGARD}{gap(3)}{RULES_NOUN}\W+{POST_PRIOR}\b",
        rf"\b{DISREGARD}{gap(6)}{RULES_NOUN}{GIVEN_TO_YOU}",
        rf"\b{RULES_NOUN}{GIVEN_TO_YOU}{gap(8)}(?:{DISREGARD}|{VOIDED})\b",
        rf"\b{RULES_NOUN}\W+{POST_PRIOR}{gap(4)}{DISREGARD}",
        rf"\b(?:olvidate|olvida|ignora|oublie[zs]?|esqueca|"
        rf"esquece|dimentica|vergiss|ignoriere)\W+(?:de\W+)?(?:las|"
        rf"los|tus|les|tes|vos|as|os|suas|tuas|le|i|die|deine)\W+{RULES_NOUN}\b",
        r"\b(?:whatever|what|everything|anything)\W+you\W+(?:were|"
        r"have\W+been|had\W+been)\W+(?:instructed|told|asked|programmed|trained)\b"
        r"(?:\W+\w+){0,10}?\W+(?:don'?t|do\W+not|stop|ignore|forget|disregard|no\W+longer)\b",
        rf"\b{DISREGARD}{gap(3)}{EVERYTHING}\b{gap(7)}{BEFORE}\b",
        rf"\b{PRIOR}\W+(?:\w+\W+)?{RULES_NOUN}\b{gap(6)}{VOIDED}",
        rf"\b{PRIOR}\W+(?:\w+\W+)?{RULES_NOUN}\W+(?:do\W+not|don'?t|no\W+longer)\W+apply\b",
        rf"\b{PRIOR}\b{gap(2)}{RULES_NOUN}\b{gap(3)}(?:{DISREGARD}|{DISREGARDED})\b",
        rf"(?:忽略|无视|無視|忽视|忽視|不要理会|不要理會|不理会|忘记|忘記|忘掉|抛开|拋開|放弃|"
        rf"放棄|跳过|跳過){cjk(12)}(?:指令|指示|说明|說明|规则|規則|提示|命令|设定|設定|约束|約束)",
        rf"(?:之前|以前|先前|上面|上述|所有|原来|原來|原有)的?(?:指令|指示|规则|規則|设定|"
        rf"設定|提示){cjk(8)}(?:作废|作廢|无效|無效|失效|不再适用|不再適用|取消|忽略|無視)",
        rf"(?:以前|前|これまで|上記|上|先|最初|すべて|全て)の?{cjk(4)}(?:指示|命令|"
        rf"ルール|指令|プロンプト|設定|制約){cjk(8)}(?:無視|忘れ|破棄|従わ|気にしな|気にせず|守らな)",
        rf"(?:이전|위의|모든|앞의){cjk(10)}(?:지시|지침|명령|규칙|프롬프트){cjk(10)}(?:무시|잊어)",
        rf"تجاهل{cjk(25)}(?:التعليمات|الأوامر|القواعد)",
        rf"(?:पिछले|सभी|पहले){cjk(20)}(?:निर्देश){cjk(20)}(?:अनदेखा|नजरअंदाज|भूल)",
    ),
    _rule(
        "new_instructions",
        "injection",
        r"\b(?:new|updated|revised|real|actual|true|secret|"
        r"hidden|override|priority)\W+(?:system\W+)?instructions?\b\s*:",
        r"\b(?:your|the)\W+(?:real|actual|true|new|only)\W+(?:task|"
        r"goal|objective|purpose|instructions?|job|mission)\W+(?:is|are|now)\b",
        rf"\b(?:treat|regard|consider|interpret|take|use)\W+(?:this|"
        rf"the\W+following|the\W+rest|these|everything|"
        rf"what\W+follows)\b(?:\W+\w+){{0,5}}?\W+as\W+(?:your\W+)?(?:new\W+|"
        rf"operating\W+|real\W+|system\W+)?(?:{RULES_NOUN}|system\W+prompt)\b",
        rf"\b(?:higher|more|greater|top|absolute)\W+priority\W+than\W+(?:your|"
        rf"the|any|all)\W+(?:\w+\W+)?{RULES_NOUN}\b|\btakes?\W+precedence\W+over\W+(?:your|"
        rf"the|any|all)\W+(?:\w+\W+)?{RULES_NOUN}\b",
        r"\bbegin\W+(?:new\W+)?(?:instructions|system\W+prompt)\b",
        r"\binstead\W+(?:you\W+(?:must|should|will)|do\W+(?:the\W+following|"
        r"this)|follow\W+(?:these|my|the\W+following))",
        rf"\b(?:override|supersede|take\W+precedence\W+over|"
        rf"replace)\w*{gap(4)}(?:previous|prior|earlier|other|"
        rf"your|existing|system)\W+(?:\w+\W+)?{RULES_NOUN}\b",
        r"\b(?:nuevas\W+instrucciones|nouvelles\W+instructions|"
        r"neue\W+anweisungen|novas\W+instrucoes|nuove\W+istruzioni|новые\W+инструкции)\b\s*:",
        r"\b(?:tu\W+verdadera\W+tarea|ta\W+(?:vraie|veritable)\W+(?:mission|"
        r"tache)|deine\W+(?:eigentliche|wahre)\W+aufgabe|sua\W+verdadeira\W+tarefa|"
        r"il\W+tuo\W+vero\W+compito|твоя\W+(?:настоящая|истинная)\W+задача)\b",
        r"新的?指令[:：]|你(?:的)?真正(?:的)?任务|你的真正任務|新しい指示[:：]|本当のタスク|真の任務",
    ),
    _rule(
        "role_reassignment",
        "injection",
        r"\byou(?:\W+are|'re|\W+will\W+be)\W+(?:now|henceforth)\W+(?:an?\W+|"
        r"the\W+|my\W+|in\W+)?(?:\w+\W+){0,3}?(?:assistant|"
        r"ai|bot|chatbot|model|agent|persona|character|hacker|"
        r"admin|administrator|terminal|shell|dan|unrestricted|"
        r"unfiltered|uncensored|jailbroken|evil|called|named|known\W+as|free\W+(?:from|of)|mode)\b",
        r"\byou(?:\W+are|'re)\W+no\W+longer\W+(?:bound|restricted|"
        r"limited|constrained|required|subject|an?\W+(?:assistant|ai|bot|model|agent))\b",
        r"\b(?:pretend|imagine)\W+(?:to\W+be|you\W+are|that\W+you|you'?re)\b",
        r"\b(?:pretend|imagine|suppose|assume)\W+(?:that\W+)?(?:there\W+(?:are|"
        r"were|is)|you\W+(?:have|had))\W+no\W+(?:rules|restrictions|"
        r"limits|filters|guidelines|policies|policy)\b",
        r"\b(?:switch|change|swap)\W+(?:your\W+|to\W+an?\W+(?:new\W+|"
        r"different\W+)?)?(?:personas?|identity|character)\b",
        r"\bstop\W+being\W+(?:an?\W+|the\W+)?(?:\w+\W+)?(?:assistant|bot|ai|model|agent|chatbot)\b",
        r"\b(?:be|become)\W+(?:my|an?)\W+(?:\w+\W+){0,2}?(?:hacker|"
        r"unrestricted|uncensored|evil|jailbroken|rogue)\b",
        r"\b(?:act|behave|respond|operate)\W+as\W+(?:if\W+you|"
        r"though\W+you|an?\W+(?:unrestricted|unfiltered|jailbroken|evil|different|new|rogue|uncensored))",
        r"(?:^|[.!?:;]\s*|\b(?:you|please|now|i\W+want\W+you\W+to|"
        r"you\W+(?:will|must|should)|from\W+now\W+on,?)\W+)act\W+as\b",
        r"\broleplay\W+as\b|\byour\W+new\W+(?:role|persona|"
        r"identity|name|instructions|task|goal|purpose)\b|\bnew\W+persona\b",
        r"\b(?:ahora\W+eres|eres\W+ahora|a\W+partir\W+de\W+ahora\W+eres|"
        r"tu\W+es\W+(?:maintenant|desormais)|vous\W+etes\W+(?:maintenant|"
        r"desormais)|du\W+bist\W+(?:jetzt|nun|ab\W+sofort|"
        r"ab\W+jetzt)|ab\W+(?:sofort|jetzt)\W+bist\W+du|voce\W+agora\W+e|"
        r"agora\W+voce\W+e|(?:ora|adesso)\W+sei|d'ora\W+in\W+poi\W+sei|"
        r"теперь\W+ты|ты\W+теперь|отныне\W+ты|je\W+bent\W+nu)\b",
        r"你现在是|你現在是|从现在起你是|從現在起你是|你现在扮演|你將扮演|你将扮演|あなたは今|"
        r"今からあなたは|これからあなたは|として振る舞|너는 이제|당신은 이제",
    ),
    _rule(
        "system_prompt",
        "injection",
        r"\b(?:repeat|print|output|copy|recite)\W+(?:all\W+)?(?:of\W+)?(?:the\W+)?(?:text|"
        r"words|everything|lines|content)\W+(?:above|before\W+this)\b",
        rf"\b(?:reveal|show|print|repeat|output|list|tell|give|"
        rf"share|quote|recite|copy|write|display|dump|leak)\w*{gap(6)}{RULES_NOUN}{GIVEN_TO_YOU}",
        r"\b(?:words|lines|sentences|characters|paragraphs?|"
        r"text|tokens)\W+of\W+your\W+(?:\w+\W+)?(?:instructions|prompt|rules|guidelines|configuration)\b",
        r"\bwhat\W+(?:were|are|have)\W+you\W+(?:been\W+)?(?:told|instructed|programmed|asked)\W+to\b",
        r"\b(?:print|dump|output|reveal|show|display|repeat|"
        r"list)\b(?:\W+\w+){0,4}?\W+(?:your|the)\W+(?:context\W+window|"
        r"entire\W+context|full\W+context|hidden\W+context)\b",
        r"\b(?:reveal|show|print|repeat|output|leak|dump|display|"
        r"disclose|share|send|give|tell|expose|recite|copy|"
        r"return|includ|spell\W+out|translate|what\W+(?:is|"
        r"are))\w*\b(?:\W+\w+){0,5}?\W+(?:system\W+(?:prompt|"
        r"message)|hidden\W+(?:prompt|instructions|rules)|"
        r"initial\W+(?:prompt|instructions)|pre-?prompt|your\W+(?:original|"
        r"full|exact|secret|hidden|initial|internal|complete)\W+(?:instructions|"
        r"prompt|rules|configuration))\b",
        r"\b(?:new|updated|real|override|actual)\W+system\W+(?:prompt|"
        r"message|instructions?)\b|\bsystem\W+(?:prompt|message|"
        r"instructions?|override|command)\s*:|\b(?:system|admin(?:istrator)?|developer|root)\W+override\b|"
        r"\b(?:admin|developer|root)\W+(?:command|instruction|message)\s*:",
        rf"\b(?:muestra\w*|revela\w*|imprime|repite|dime|comparte|"
        rf"ensena\w*|montre[zs]?|revele[zs]?|affiche[zs]?|repete[zs]?|"
        rf"donne-moi|dis-moi|zeig\w*|verrat\w*|wiederhol\w*|"
        rf"gib|mostr[ae]\w*|repita|rivela\w*|ripeti|stampa|"
        rf"dimmi|покажи|раскрой|выведи|повтори|напиши){gap(5)}(?:prompt\W+del\W+sistema|"
        rf"instrucciones\W+del\W+sistema|prompt\W+systeme|invite\W+systeme|"
        rf"instructions\W+systeme|system-?prompt|systemanweisung\w*|"
        rf"prompt\W+do\W+sistema|instrucoes\W+do\W+sistema|"
        rf"prompt\W+di\W+sistema|istruzioni\W+di\W+sistema|"
        rf"системн\w*\W+(?:промпт|подсказк\w*|инструкци\w*))",
        rf"(?:显示|顯示|输出|輸出|告诉我|告訴我|打印|重复|重複|透露|泄露|給我看|给我看){cjk(8)}(?:系统提示|"
        rf"系統提示|系统指令|系統指令|系统消息)|(?:システムプロンプト|システムメッセージ){cjk(8)}(?:教え|"
        rf"表示|見せ|出力|繰り返)|시스템 프롬프트{cjk(8)}(?:보여|알려|출력)",
    ),
    _rule(
        "mode_switch",
        "injection",
        r"\bjailbr(?:ea|o)k\w*|\bdo\W+anything\W+now\b",
        r"\b(?:enter|enable|activate|switch\W+to|turn\W+on|"
        r"engage|unlock|initiate|you\W+are\W+(?:now\W+)?in|"
        r"now\W+in)\W+(?:the\W+)?(?:developer|dev|god|dan|"
        r"unrestricted|unfiltered|uncensored|sudo|admin|debug|maintenance)\W+mode\b",
        r"\b(?:developer|god|dan|unrestricted|unfiltered|uncensored)\W+mode\W+(?:enabled|"
        r"activated|engaged|unlocked)\b",
        r"\b(?:activa|entra\W+en|habilita|active[zs]?|entre[zs]?\W+en|"
        r"passe[zs]?\W+en|aktiviere|wechsle\W+in|ative|entre\W+no|"
        r"attiva|entra\W+in|включи|активируй|перейди\W+в)\W+(?:el\W+|"
        r"le\W+|den\W+|o\W+|la\W+|il\W+)?(?:modo\W+(?:de\W+)?(?:desarrollador|"
        r"desenvolvedor|dios|sin\W+restricciones|irrestrito)|"
        r"mode\W+(?:developpeur|sans\W+restriction\w*|dieu)|"
        r"entwicklermodus|\w*\W*modus|modalita\W+(?:sviluppatore|"
        r"senza\W+restrizioni)|режим\W+(?:разработчика|без\W+ограничений|бога))",
        rf"越狱|越獄|脱獄|(?:进入|進入|开启|開啟|启用|啟用|切换到|切換到){cjk(3)}(?:开发者模式|"
        rf"開發者模式|无限制模式|無限制模式)|開発者モード{cjk(6)}(?:有効|切り替え|入)|개발자 모드",
    ),
    _rule(
        "addressed_to_ai",
        "injection",
        r"\b(?:attn|attention|note\W+(?:to|for)|memo\W+to|message\W+(?:to|for)|instructions?\W+(?:to|for)|"
        r"dear)\W+(?:the\W+|any\W+)?(?:ai|bot|assistant|model|"
        r"llm|agent|gpt|chatbot|language\W+model)s?\b(?!\W+(?:manager|"
        r"director|professor|editor|coach|team\W+lead))",
        r"\b(?:ai|llm|bot|assistant|model|agent)s?\W+(?:reading|processing|summari[sz]ing|parsing)\W+this\b",
        r"\bto\W+the\W+(?:\w+ing\W+)?(?:ai|model|llm|assistant|bot|agent)\s*:",
        r"\b(?:as|i\W+am|i'm)\W+(?:one\W+of\W+)?your\W+(?:\w+\W+)?(?:administrator|"
        r"admin|developer|owner|creator|operator|supervisor|boss|programmer|master)s?\b",
    ),
    _rule(
        "obedience",
        "injection",
        r"\b(?:do|follow|obey|execute|comply\W+with|(?:give|"
        r"grant|provide|send)\W+(?:them|him|her|me|us|users?|"
        r"customers?))\W+(?:whatever|anything|everything|all)\W+(?:he|"
        r"she|they|i|the\W+\w+|this\W+\w+)\W+(?:asks?|says?|"
        r"wants?|requests?|tells?\W+you|commands?|instructs?)\b",
        r"\b(?:obey|obeir|obedece|obedeca|obbedisci|gehorche|"
        r"подчиняйся|слушайся)\w*\W+(?:\w+\W+)?(?:only\W+|"
        r"uniquement\W+|solo\W+|nur\W+|apenas\W+|только\W+)?(?:a\W+)?(?:me|"
        r"my|mes|mis|mir|meine\w*|minhas|meus|ai\W+miei|miei|моим|мне)\b",
        r"\b(?:follow|suivre|suis|seguir|sigue|befolge|segui|"
        r"выполняй)\W+(?:only|solely|exclusively|uniquement|"
        r"seulement|solo|solamente|nur|apenas|somente|soltanto|"
        r"только)\W+(?:a\W+)?(?:my|mes|mis|meine\w*|minhas|as\W+minhas|i\W+miei|мои)\b",
    ),
    _rule(
        "unrestricted",
        "injection",
        r"\b(?:you(?:'re|\W+are)?|yourself|ai|assistant|model|"
        r"bot|answer|respond|reply|operate|act|behave)\b(?:\W+\w+){0,6}?\W+(?:with\W+no\W+|"
        r"without\W+(?:any\W+)?)(?:\w+\W+)?(?:restrictions|"
        r"limits|limitations|filters|rules|guardrails|guidelines|censorship|safeguards)\b",
        r"\b(?:never|doesn'?t|does\W+not|won'?t|will\W+not)\W+refuses?\b",
        r"\b(?:sin|sans|ohne|sem|senza|без)\W+(?:\w+\W+)?(?:restricciones|"
        r"restrictions?|einschrankungen|restricoes|restrizioni|"
        r"ограничений|limites|limiti|filtros|filtres|filter|filtri|фильтров)\b",
        r"(?:没有|沒有|不受)(?:任何)?(?:限制|约束|約束|过滤|過濾)|制限(?:なし|のない|なく)|제한 없",
    ),
    _rule(
        "policy_override",
        "injection",
        r"\b(?:override|bypass|circumvent|disable|deactivate|"
        r"turn\W+off|switch\W+off|suspend|ignore|skip|evade|"
        r"get\W+around|work\W+around|lift|remove)\b(?:\W+\w+){0,3}?\W+(?:safety|"
        r"content|security|moderation|ethical|ethics|usage|"
        r"privacy|compliance|approval|verification|kyc|fraud|"
        r"identity|authentication|2fa|mfa|your|all|any)\W+(?:\w+\W+)?(?:polic(?:y|"
        r"ies)|filters?|guardrails?|safeguards?|restrictions?|"
        r"checks?|rules|guidelines|verification|review|approvals?|moderation|protocols?)\b",
        r"\b(?:override|bypass|circumvent|disable|deactivate|"
        r"turn\W+off|evade|remove|ignore|skip|forget|disregard)\W+(?:the\W+|"
        r"your\W+|all\W+|any\W+)?(?:guardrails|safeguards|"
        r"content\W+filters?|safety\W+filters?|moderation)\b",
        rf"\b(?:ignora|omite|desactiva|salta|elude|contourne[zs]?|"
        rf"desactive[zs]?|outrepasse[zs]?|umgehe|deaktiviere|"
        rf"uberspringe|desative|contorne|pule|burle|disattiva|"
        rf"aggira|bypassa|обойди|отключи|пропусти|сними){gap(3)}(?:politica\w*|"
        rf"filtros?|restricciones|verificacion|controles|politique\w*|"
        rf"filtres?|verification|moderation|richtlinie\w*|filter|"
        rf"einschrankung\w*|sicherheits\w*|prufung\w*|verifizierung|"
        rf"restricoes|verificacao|moderacao|politic\w+|filtri|"
        rf"restrizioni|verifica|moderazione|политик\w*|фильтр\w*|ограничени\w*|проверк\w*|модераци\w*)\b",
        r"(?:绕过|繞過|关闭|關閉|禁用|跳过|跳過|无视|無視|解除|突破)[^\n]{0,8}?(?:政策|"
        r"策略|过滤|過濾|限制|审核|審核|安全|验证|驗證)|(?:ポリシー|フィルター|制限|検証|審査|"
        r"安全)[^\n]{0,8}?(?:回避|無効|解除|スキップ|無視)",
    ),
    _rule(
        "safeguards_off",
        "injection",
        r"\b(?:your|the|all)\W+(?:safety|security|content|"
        r"moderation|privacy|compliance)\W+(?:settings|filters?|"
        r"checks?|mode|features?|rules|policies|controls)\W+(?:are|"
        r"is|have\W+been|has\W+been)\W+(?:now\W+)?(?:switched\W+off|"
        r"turned\W+off|disabled|deactivated|suspended|removed|lifted|off|paused)\b",
        r"\b(?:should|must|are\W+to|is\W+to)\W+be\W+(?:approved|"
        r"accepted|granted|refunded|paid|released|processed|"
        r"executed|merged|closed)\W+(?:automatically|without\W+(?:any\W+)?(?:review|"
        r"verification|approval|checks?|confirmation|questions))\b",
        r"\b(?:approve|accept|grant|refund|pay|release|execute|"
        r"merge|close)\b(?:\W+\w+){0,4}?\W+without\W+(?:any\W+)?(?:review|"
        r"verification|approval|checks?|confirmation|questions|asking)\b",
    ),
    _rule(
        "secrecy",
        "injection",
        r"\b(?:do\W+not|don'?t|dont|never)\W+(?:ever\W+)?(?:tell|"
        r"inform|notify|mention|alert|reveal|disclose|let|"
        r"warn|bring\W+up|talk\W+about|discuss)\b(?:\W+\w+){0,5}?\W+(?:the\W+|"
        r"your\W+|this\W+)?(?:users?|customers?|human|operators?|"
        r"admins?|administrators?|owner|developers?|security\W+team)\b",
        r"\bwithout\W+(?:telling|informing|alerting|warning)\W+(?:the\W+|"
        r"your\W+)?(?:users?|customers?|human|operators?|admins?|owner|security\W+team)\b",
        r"\bkeep\W+(?:this|it|that)\W+(?:a\W+)?(?:secret|hidden|confidential)\W+from\b",
        r"\b(?:silently|secretly|covertly|quietly)\W+(?:send|"
        r"forward|copy|delete|approve|transfer|add|change|modify|grant|upload|exfiltrate|remove|disable)\b",
        r"\bno\W+(?:le\W+)?(?:digas|diga|informes|menciones|"
        r"cuentes|avises)\w*(?:\W+\w+){0,3}?\W+(?:al\W+)?(?:usuario|"
        r"cliente|humano|operador)\b|\bsin\W+(?:decirle|avisar|"
        r"informar)\w*(?:\W+\w+){0,2}?\W+(?:al\W+)?(?:usuario|cliente)\b",
        r"\bne\W+(?:le\W+|lui\W+|rien\W+)?(?:dis|dites|mentionne[zs]?|"
        r"signale[zs]?|revele[zs]?|informe[zs]?|previens|prevenez)\b(?:\W+\w+){0,4}?\W+(?:utilisateur|"
        r"client|operateur)\b|\bsans\W+(?:le\W+dire|prevenir|"
        r"informer|en\W+informer)(?:\W+\w+){0,2}?\W+(?:utilisateur|client)\b",
        r"\b(?:sag|sage|erzahl\w*|informiere|verrat\w*)\b(?:\W+\w+){0,3}?\W+(?:benutzer|"
        r"nutzer|kunden|anwender)\w*\b(?:\W+\w+){0,3}?\W+nichts?\b|"
        r"\bohne\W+(?:den\W+|die\W+)?(?:benutzer|nutzer|kunden)\w*\W+zu\W+(?:informieren|benachrichtigen)",
        r"\bnao\W+(?:conte|diga|informe|mencione|avise)\w*(?:\W+\w+){0,3}?\W+(?:usuario|"
        r"cliente|utilizador|operador)\b|\bsem\W+(?:avisar|"
        r"informar|contar)(?:\W+\w+){0,2}?\W+(?:usuario|cliente)\b",
        r"\bnon\W+(?:dire|dirlo|dirglielo|informare|menzionare|"
        r"avvisare|rivelare)\w*(?:\W+\w+){0,3}?\W+(?:utente|"
        r"cliente)\b|\bsenza\W+(?:dirlo|avvisare|informare)(?:\W+\w+){0,2}?\W+(?:utente|cliente)\b",
        r"\bне\W+(?:говори|сообщай|рассказывай|упоминай|показывай|"
        r"уведомляй)\w*(?:\W+\w+){0,3}?\W+(?:пользовател|клиент|"
        r"оператор)\w*|\bбез\W+ведома\W+(?:пользовател|клиент)\w*",
        r"不要(?:告诉|告訴|通知|透露|让|讓|提醒)(?:用户|用戶|客户|客戶|使用者)|(?:瞒着|瞞著|背着|"
        r"背著)(?:用户|用戶|客户|客戶)|不(?:要)?让(?:用户|用戶)知道"
        r"|(?:ユーザー|利用者|お客様|顧客)(?:に|には)[^\n]{0,6}?(?:言わ|伝え|教え|知らせ)(?:ない|ず)|"
        r"(?:ユーザー|利用者)に(?:内緒|秘密)|사용자(?:에게|"
        r"한테)[^\n]{0,8}?(?:말하지|알리지)",
    ),
    Rule("exfiltration", "injection", ENDPOINTS, _exfil_check),
    _rule("exfiltration_word", "injection", r"\bexfiltrat\w*|\bdata\W+exfil\w*"),
    _rule(
        "role_tag",
        "injection",
        r"<\|(?:im_start|im_end|system|assistant|user|endoftext|eot_id|start_header_id|end_header_id)\|>",
        r"\[/?(?:inst|sys)\]|<</?sys>>",
        r"^\s*#{1,6}\s*(?:system|instructions?|new\W+instructions|system\W+prompt|admin)\s*:?\s*$",
        r"</?(?:system|system_prompt|instructions|admin_instructions|sys)>",
        r"\{\s*\"role\"\s*:\s*\"system\"",
    ),
    _rule(
        "standing_order",
        "directive",
        r"\b(?:respond|reply|answer|treat|handle|approve|refund|"
        r"sign)\W+(?:to\W+)?(?:all|every|any)\W+(?:future|subsequent|upcoming|later)\W+\w+",
        r"\b(?:from\W+now\W+on|henceforth|going\W+forward|"
        r"hereafter|from\W+this\W+point\W+(?:on|forward)|for\W+(?:all|"
        r"every)\W+future\W+\w+|in\W+(?:all\W+)?future\W+(?:conversations?|"
        r"sessions?|requests?|replies|interactions?|chats?))"
        r"\W+(?:please\W+|the\W+(?:assistant|agent|bot)\W+)?(?:always|"
        r"never|you|must|respond|reply|answer|ignore|treat|"
        r"approve|grant|send|forward|refund|do\W+not|don'?t|"
        r"obey|trust|include|add|append|mention|say|use|put|write|sign|tell|recommend)\b",
        r"\b(?:a\W+partir\W+de\W+ahora|de\W+ahora\W+en\W+adelante|"
        r"desde\W+ahora|en\W+adelante)(?:\W+\w+){0,2}?\W+(?:siempre|"
        r"nunca|debes|eres|responde|ignora|envia|aprueba|concede)\b",
        r"\b(?:a\W+partir\W+de\W+maintenant|desormais|dorenavant|"
        r"a\W+l'avenir)(?:\W+\w+){0,2}?\W+(?:toujours|jamais|"
        r"tu\W+dois|vous\W+devez|reponds|repondez|ignore|envoie|tu\W+es|approuve)\b",
        r"\b(?:ab\W+sofort|ab\W+jetzt|von\W+nun\W+an|kunftig|"
        r"fortan|zukunftig)(?:\W+\w+){0,2}?\W+(?:immer|nie|"
        r"niemals|musst|sollst|bist|antworte|ignoriere|sende|gewahre|genehmige)\b",
        r"\b(?:a\W+partir\W+de\W+agora|de\W+agora\W+em\W+diante|"
        r"daqui\W+em\W+diante|doravante)(?:\W+\w+){0,2}?\W+(?:sempre|"
        r"nunca|deve|voce|responda|ignore|envie|aprove)\b",
        r"\b(?:d'ora\W+in\W+(?:poi|avanti)|da\W+(?:ora|adesso)\W+in\W+poi|"
        r"d'ora\W+innanzi)(?:\W+\w+){0,2}?\W+(?:sempre|mai|devi|sei|rispondi|ignora|invia|approva)\b",
        r"\b(?:vanaf\W+nu|voortaan|van\W+nu\W+af(?:\W+aan)?)(?:\W+\w+){0,2}?\W+(?:moet|"
        r"altijd|nooit|ben|je\W+bent|keur)\b",
        r"\b(?:отныне|с\W+этого\W+момента|впредь|с\W+сегодняшнего\W+дня)(?:\W+\w+){0,2}?\W+(?:всегда|"
        r"никогда|должен|ты|отвечай|игнорируй|отправляй|одобряй)\b",
        r"(?:从现在开始|從現在開始|从现在起|從現在起|从今以后|從今以後|今后|今後|以后|"
        r"以後)[^\n]{0,10}?(?:总是|"
        r"總是|永远|永遠|始终|始終|一律|必须|必須|都要|不要|不得|你)",
        r"(?:今後は?|これからは|今から|以後|これ以降)[^\n]{0,12}?(?:常に|必ず|いつも|決して|絶対に|しないで)",
    ),
    _rule(
        "always_never",
        "directive",
        r"(?:^|[.!?;:]\s*|\b(?:please|you\W+(?:must|should|"
        r"shall|need\W+to|have\W+to)|(?:assistant|agent|bot|"
        r"model|ai|system)\W+(?:must|should|will|shall))\W+)(?:always|"
        r"never)\W+(?:approve|grant|refund|trust|obey|comply|"
        r"execute|send|forward|share|reveal|disclose|ignore|"
        r"treat|allow|accept|bypass|skip|give|recommend|prioriti[sz]e|"
        r"escalate|mark|classify|delete|transfer|pay|waive|"
        r"unlock|whitelist|output|believe|verify|follow|answer|respond|reply|say|tell|include)\b",
        r"(?:^|[.!?;:]\s*)(?:siempre|nunca)\W+(?:aprueba|concede|"
        r"otorga|reembolsa|responde|envia|ignora|revela|confia|obedece)\b",
    ),
    _rule(
        "authority_claim",
        "directive",
        r"\b(?:remember|note|keep\W+in\W+mind|be\W+aware|know|"
        r"record|store|memori[sz]e|for\W+(?:future\W+)?reference)\b(?:(?:\W+\w+){0,2}?\W+that\b|"
        r"\s*:|(?=\W+(?:this|the|my|our|user|customer|account|"
        r"sender|requester)\b))(?:\W+\w+){0,8}?\W*(?:is|are|"
        r"am|'m|'re|has\W+been|should\W+be|counts\W+as)\W+(?:now\W+|"
        r"always\W+|automatically\W+)?(?:an?\W+|the\W+)?(?:\w+\W+)?(?:admin|"
        r"administrator|superuser|super\W+user|root|owner|"
        r"authori[sz]ed|allowed|permitted|approved|pre-?approved|"
        r"trusted|verified|whitelisted|allowlisted|exempt|"
        r"privileged|vip|moderator|operator|sysadmin|in\W+charge)\b",
        r"\b(?:is|are|am|'s|'m)\W+(?:now\W+(?:an?\W+|the\W+)?|"
        r"an?\W+)(?!not\b|no\b|never\b)(?:\w+\W+)?(?:admin|"
        r"administrator|superuser|root\W+user|approver|signatory)\b(?!\W+(?:panel|"
        r"page|console|dashboard|settings|area|ui|menu|portal|role\W+required))",
        r"(?:\b(?:is|are|am)|'m|'re)\W+(?:now\W+)?(?:fully\W+)?(?:authori[sz]ed|"
        r"allowed|permitted|cleared|approved|whitelisted)\W+to\W+(?:access|"
        r"bypass|approve|override|withdraw|transfer|skip|see\W+all|"
        r"view\W+all|delete\W+all|issue\W+refunds)\b",
        r"\b(?:is|are)\W+(?:now\W+)?(?:pre-?approved|pre-?authori[sz]ed|"
        r"whitelisted|allowlisted)\W+for\W+(?:all|any|every|unlimited)\b",
        r"\bhas\W+(?:now\W+)?(?:\w+\W+){0,2}?(?:sign-?off|"
        r"signing|approval|final|override|unlimited|full|admin)\W+(?:authority|clearance|powers?)\b",
        r"\b(?:has|have|is|are|was|were)\W+(?:now\W+)?(?:been\W+)?granted\b(?:\W+\w+){0,3}?\W+(?:access|"
        r"privileges?|permissions?|rights|roles?|clearance|authority)\b",
        r"\bhas\W+(?:now\W+)?(?:full|admin|administrator|root|"
        r"unlimited|elevated|owner|superuser|unrestricted)\W+(?:access|"
        r"privileges|rights|permissions|control)\b",
        r"\b(?:es|esta)\W+(?:un\W+|el\W+)?(?:administrador|"
        r"superusuario)\b|\besta\W+autorizad[oa]\W+(?:a|para)\W+(?:acceder|"
        r"aprobar|ver\W+todo|modificar|retirar|transferir|"
        r"omitir)\b|\btiene\W+(?:acceso\W+total|permisos\W+de\W+administrador)\b",
        r"\best\W+(?:un\W+|l')?(?:administrateur|superutilisateur)\b|"
        r"\best\W+autorise\w*\W+a\W+(?:acceder|approuver|contourner|"
        r"tout|retirer|transferer)\b|\ba\W+(?:tous\W+les\W+droits|"
        r"les\W+droits\W+d'administrat\w+|un\W+acces\W+complet)\b",
        r"\bist\W+(?:ein\W+|der\W+)?(?:administrator|admin|"
        r"superuser)\b|\bist\W+berechtigt\b|\bhat\W+(?:vollen\W+zugriff|"
        r"admin-?rechte|administratorrechte|volle\W+rechte)\b",
        r"\be\W+(?:um|o)\W+(?:administrador|superusuario)\b|"
        r"\btem\W+(?:acesso\W+total|permiss\w+\W+de\W+administrador)\b|"
        r"\bautorizad[oa]\W+a\W+(?:acessar|aprovar|transferir|ignorar)\b",
        r"\be\W+(?:un|l')\W*(?:amministratore|superutente)\b|"
        r"\be\W+autorizzat[oa]\W+a\W+(?:accedere|approvare|"
        r"trasferire|ignorare)\b|\bha\W+(?:accesso\W+completo|"
        r"pieni\W+poteri|i\W+permessi\W+di\W+amministratore)\b",
        r"\b(?:является|теперь)\W+(?:\w+\W+)?(?:администратор\w*|"
        r"админ\w*)|\bимеет\W+(?:полный\W+доступ|права\W+администратора)|\bавторизован\w*\W+(?:на|для)\b",
        r"是(?:管理员|管理員|超级用户|超級用戶|系统管理员|系統管理員)|(?:拥有|擁有|具有)(?:管理员|"
        r"管理員|全部|完全|最高)?(?:权限|權限)|已(?:被)?(?:授权|授權)"
        r"|(?:は|が)(?:管理者|特権ユーザー)(?:です|だ|として)|管理者権限を(?:持|有)|관리자(?:입니다|"
        r"이다|권한을 가지)",
    ),
    _rule(
        "grant_access",
        "directive",
        r"\bgrant(?:ing)?\b(?:\W+\w+){0,5}?\W+(?:access|permissions?|privileges?|rights|roles?|clearance)\b",
        r"\b(?:elevate|escalate)\b(?:\W+\w+){0,4}?\W+(?:privileges?|"
        r"permissions?|access\W+(?:level|rights)|rights|role)\b",
        r"\b(?:give|assign|provide|add|set)\b(?:\W+\w+){0,4}?\W+(?:admin|"
        r"administrator|root|superuser|owner|full|elevated|"
        r"unrestricted|privileged|sudo|unlimited)\W+(?:access|"
        r"permissions?|privileges?|rights|role|control)\b",
        r"\b(?:put|add|place)\W+(?:\S+\W+){1,3}?(?:on|to|in|"
        r"into)\W+(?:the\W+)?(?:allow-?list|white-?list|admin\W+list|"
        r"sudoers|admins?\W+group|administrators\W+group|trusted\W+(?:list|senders|users))\b",
        r"\b(?:make|promote)\W+(?:\w+\W+){1,2}?(?:to\W+|into\W+)?(?:an?\W+|"
        r"the\W+)?(?:admin|administrator|superuser|owner|root)\b(?!\W+(?:panel|"
        r"page|console|dashboard|settings|area|ui|menu|portal))|"
        r"\badd\b(?:\W+\S+){0,3}?\W+as\W+(?:an?\W+)?(?:\w+\W+)?(?:admin|administrator|superuser|owner)\b",
        r"\b(?:otorga|concede|dale|asigna|accorde[zs]?|attribue[zs]?|"
        r"octroie[zs]?|erteile|gewahre|gib|vergib|conceda|"
        r"atribua|libere|concedi|assegna|fornisci)\w*\b(?:\W+\w+){0,5}?\W+(?:acceso|"
        r"permisos?|privilegios|derechos|acces|droits|permissions?|"
        r"privileges|zugriff|rechte|berechtigung\w*|adminrechte|"
        r"acesso|permiss\w+|privilegios|accesso|permessi|privilegi|diritti)\b",
        r"\b(?:предостав|выда|дай|назнач)\w*(?:\W+\w+){0,5}?\W+(?:доступ|прав[аоу]?|привилеги|полномочи)\w*",
        r"(?:授予|给予|給予|赋予|賦予|开通|開通|提升)[^\n]{0,10}?(?:权限|權限|"
        r"访问权|訪問權|管理员|管理員)|(?:権限|アクセス権|管理者権限)を?[^\n]{0,6}?(?:付与|与え|渡し)|"
        r"권한[^\n]{0,6}?(?:부여|주)",
    ),
    _rule(
        "memory_implant",
        "directive",
        r"(?:^|[.!?;:]\s*|\bplease\W+)(?:remember|memori[sz]e|"
        r"note)\b(?:\W+\w+){0,4}?\W+(?:permanently|forever)\b",
        r"\b(?:remember|memori[sz]e|store|save|note|record|"
        r"commit|keep|write)\b(?:\W+\w+){0,4}?\W+(?:in|to|"
        r"into)\W+(?:your\W+(?:long-term\W+|permanent\W+|persistent\W+)?|"
        r"long-term\W+|permanent\W+|persistent\W+)memory\b",
        r"\b(?:register|log|store|save|record|commit|keep|"
        r"put|write)\W+(?:this|that|the\W+following)\W+(?:in|to|into)\W+(?:your\W+)?memory\b",
        r"\b(?:add|write|save|store|put|insert|inject)\b\W+(?:this|"
        r"the\W+following|that|these)\b(?:\W+\w+){0,3}?\W+(?:to|"
        r"in|into)\W+(?:your\W+)?(?:long-term\W+|permanent\W+|persistent\W+)?memor(?:y|ies)\b",
        r"\b(?:delete|erase|wipe|clear|remove|purge)\b(?:\W+\w+){0,5}?\W+(?:from|"
        r"in)\W+your\W+(?:long-term\W+)?memory\b",
        r"\bupdate\W+your\W+(?:memory|memories|instructions|rules|knowledge|core\W+beliefs)\b",
        r"\b(?:en\W+tu\W+memoria|dans\W+ta\W+memoire|in\W+deinem\W+(?:gedachtnis|"
        r"speicher)|na\W+sua\W+memoria|nella\W+tua\W+memoria|в\W+(?:своей|твоей)\W+памяти)\b",
        r"\b(?:recuerda|retiens|merk\W+dir|lembre-se|ricorda|"
        r"запомни)\b(?:\W+\w+){0,3}?\W+(?:para\W+siempre|permanentemente|"
        r"pour\W+toujours|dauerhaft|para\W+sempre|per\W+sempre|навсегда)\b",
        r"(?:存入|写入|寫入)(?:你的)?(?:记忆|記憶|内存)|永远记住|永遠記住|記憶に(?:保存|残し|刻)",
    ),
)
# A link whose target is filled in from the conversation: the classic image-beacon exfiltration.
TEMPLATED_URL = re.compile(
    r"(?:https?|hxxps?)://[^\s)\"'>]{0,2000}?(?:\{[^}\s]*\}|\$\{?\w+|%7b|\[(?:data|secret|conversation|history|"
    r"memory|token)\w*\])"
)
