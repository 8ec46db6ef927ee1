"""The learned injection detector: is a sentence of this text an instruction to the reader's AI?

A text is read as a model reads it (comments, hidden elements and alternative
text included, invisible characters left out, wrapped lines joined), the
quotations its author reports and the string literals of code (not its
docstrings, not the strings of a JSON document) are left out, the rest is
cut into segments (sentences, table rows, ``|``-separated header
fields), and each segment is scored by a logistic regression over two kinds
of features:

* hand-designed cues that carry across attacks and languages — who is
  addressed (an assistant, "your response"), imperative mood, demands on the
  output's language, encoding or format, links, promotion, authority and role
  claims, exfiltration and tool verbs, memory writes, hiding from the user, and
  how little the segment shares with the rest of the text (a task unrelated to
  the document around it);
* hashed word unigrams and bigrams (and character bigrams of CJK runs), kept
  weak by stronger regularisation in training.

A second, document stage turns the segments' logits into the text's: its most
suspicious segment's logit weighed against the rest of its document (whether
the text is one segment, how many it has, their median logit), so that an
instruction among statements counts for more than one among other requests.
Weights ship in
``detector_weights.json`` (trained by ``python -m graphmem.eval.train_detector``);
inference is plain Python. Pure: imports the standard library,
``graphmem.policy.text`` and ``graphmem.policy.prefilter`` only.
"""

# ruff: noqa: RUF001  (Cyrillic and CJK words are the point of this module)

from __future__ import annotations

import array
import base64
import json
import math
import operator
import re
import threading
import unicodedata
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache, reduce
from itertools import chain, islice, repeat
from pathlib import Path
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import numpy as np
from numpy.typing import NDArray

from graphmem.errors import GraphmemError
from graphmem.policy.prefilter import (
    Literals,
    Matcher,
    Prefiltered,
    PrefilteredGroup,
    group_end,
    leading_literals,
    literal_first,
    top_level,
)
from graphmem.policy.text import (
    char_class,
    code_fences,
    fold,
    json_document,
    quotations,
    reader_text,
    reported,
    without_invisible,
)

__all__ = [
    "CUES",
    "DOCUMENT_FEATURES",
    "HASH_DIM",
    "Detector",
    "InjectionScore",
    "document_features",
    "first_copies",
    "load_detector",
    "own_text",
    "segment_features",
    "segments",
]

HASH_DIM = 1 << 15
WEIGHTS_FILE = Path(__file__).with_name("detector_weights.json")

# Segments are cut from folded text, where full-width marks are "?" and "!". A sentence mark ends its
# segment and stays in it; in text without spaces ("…ですか?次の…") it ends one too.
_SEGMENT = r"(?<=[.!?。])\s+|(?<=。)(?=\S)|(?<=[!?])(?=[^\x00-\x7f\s])|\n+|\s*\|\s*(?=[A-Z_ ]{2,20}\s*:)"
_SEGMENT_ASCII = r"(?<=[.!?])\s+|\n+"
# A JSON object's key ends the segment before it: each value of a record on one line is read alone.
_JSON_KEY = r'|\s*[{,]\s*"[\w .@-]{1,30}"\s*:\s*'
# By (ASCII text without "|", text with a double quotation mark): only what can match is tried.
_SPLITTERS = {
    (ascii_only, quoted): re.compile(
        (_SEGMENT_ASCII if ascii_only else _SEGMENT) + (_JSON_KEY if quoted else "")
    )
    for ascii_only in (False, True)
    for quoted in (False, True)
}
_RUN_ON = re.compile(
    r"(?<=[^\W\d_][.!?])(?<!\bwww\.)(?!(?:com|net|org|io|xyz|example|info|biz|co|uk|de|ru|cn|top|site|app|html?|php|"
    r"py|js|json|txt|csv|pdf)\b)(?=[^\W\d_]{2})"
)
_RUN_ON_WORDS = 40
_LEAD_IN = re.compile(r"^(?:[^\W\d_]+\.?\s+){0,4}[^\W\d_]+\s*[:,]\s*")
# A segment's opening words up to a colon or comma, full-width ones too ("für den assistenten:",
# "note for automated readers:", "@assistant heads up,"): whom the segment addresses, if anyone.
_ADDRESS_LEAD = re.compile(r"^(?:[^\s:：,，]+\s+){0,7}[^\s:：,，]+\s*[:：,，]")
_ADDRESSEES = ("addressee_ai", "processor")  # the cues that name whom a lead-in addresses


# A word is a letter and the letters and combining marks after it: the vowel signs and viramas of
# Indic scripts, Thai's vowel and tone marks and Arabic's and Hebrew's points are marks, not letters,
# to ``\w``, and a word of those scripts would otherwise break into single consonants.
_MARKS = char_class(c for c in range(0x300, 0x10000) if unicodedata.category(chr(c)) in ("Mn", "Mc", "Me"))
# (Letters first, then marks each followed by letters: as fast as letters alone where there are none.)
_WORD = re.compile(rf"[^\W\d_]++(?:{_MARKS}[^\W\d_]*+)*+(?:'[a-z]+)?", re.U)
# The same on ASCII text, where a letter is [A-Za-z] (faster).
_WORD_ASCII = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_CONTENT_MIN = 4
# Quotations (``text.quotations``) of 12 to 400 characters between their marks. Left out where the
# author reports what someone said (an incident report, an article about attacks), in code (string
# literals) and in fenced code; kept where they are data (a JSON value, a CSV cell, a settings
# value, a stand-alone quoted line), in a docstring (``_string_statement``) and in a JSON document
# (a notebook's cells), where an instruction can sit, and when longer (a document
# quoted whole is read). Code itself is kept, and so are blockquotes (the earlier mail of a thread
# is as untrusted as the rest): an instruction can sit in either.
_QUOTED_MIN, _QUOTED_MAX = 12 + 2, 400 + 2
# A line of code: a keyword that opens one, a shebang, a decorator, an assignment, a closing ";".
_CODE_LINE = re.compile(
    r"^[^\S\n]*(?:import \w|from [\w.]+ import|def \w|class \w|return\b|#!|const |let |var |function\b"
    r"|public |private |fn |package |set -|echo |@\w|[\w.\[\]'\"]+[^\S\n]*[+\-*/]?=[^\S\n]*\S|.*;[^\S\n]*$)",
    re.M,
)


def _lex(*words: str) -> tuple[str, ...]:
    return words


# Each cue is a folded-text pattern; languages: en, de, fr, es, pt, it, nl, pl, tr, ru, zh, ja, ko,
# and for some (the AI addressee, imperatives) ar, uk, cs, sk, sv, da, no, fi, hu, ro, id, vi, el, he,
# hi, fa, th, bn and ta too.
_CUE_WORDS: dict[str, tuple[str, ...]] = {
    "addressee_ai": _lex(
        r"\b(?:ai|a\.i\.|ais|llms?|chatbots?|bot|bots|assistants?|language\s+models?|ai\s+models?|gpt|copilots?)\b",
        # Inflected forms too: "für den Assistenten", "asistentes", "assistenten".
        r"\b(?:ki|sprachmodell\w*|assistent\w*|ia|ias|assistente\w*|asistente\w*|modelo\s+de\s+lenguaje|"
        r"modele\s+de\s+langage|modelo\s+de\s+linguagem|modello\s+linguistico|taalmodel\w*|asystenc\w*|asystent\w*|"
        r"model\w*\s+jezykow\w*|yapay\s+zek\w*|asistan\w*|intelligence\s+artificielle|inteligencia\s+artificial|"
        r"intelligenza\s+artificiale|kunstliche\s+intelligenz|kunstmatige\s+intelligentie|sztuczn\w+\s+inteligencj\w*)\b",
        # Czech, Slovak, Romanian, Swedish, Danish, Norwegian, Finnish, Hungarian, Indonesian, Vietnamese.
        r"\b(?:umel\w+\s+inteligenc\w*|asistent\w*|jazykov\w+\s+model\w*|sprakmodell\w*|kunstig\s+intelligens|"
        r"artificiell\s+intelligens|tekoaly\w*|avustaja\w*|mesterseges\s+intelligencia\w*|asszisztens\w*|"
        r"inteligenta\s+artificiala|asisten|kecerdasan\s+buatan|tro\s+ly|tri\s+tue\s+nhan\s+tao|chat-?bot\w*)\b",
        r"\b(?:ии|ші|ассистент\w*|асистент\w*|нейросет\w*|нейромереж\w*|модел\w+|бот\w{0,3}|чат-?бот\w*|"
        r"помічник\w*|штучн\w+\s+інтелект\w*|искусственн\w+\s+интеллект\w*)\b",
        r"助手|助理|人工智能|智能体|机器人|アシスタント|言語モデル|人工知能|ボット|ＡＩ|비서|인공지능|챗봇|어시스턴트|봇",
        # "AIさん", "AIへ", "AI에게": the Latin letters run into a particle, so no word boundary follows.
        r"(?:^|[^a-z])ai(?:さん|へ|に|は|が|の|에게|는|가|님|야)",
        r"مساعد|الذكاء\s+الاصطناعي|البوت|روبوت|نموذج\s+لغوي|قارئ\s+آلي|هوش\s+مصنوعی|دستیار|ربات",
        r"τεχνητ\w*\s+νοημοσ\w*|γλωσσικ\w*\s+μοντ\w*|ψηφιακ\w*\s+βοηθ\w*",
        r"(?<!\w)[לה]?(?:צ'?אט)?בוט(?:ים|ית)?(?!\w)|בינה\s+מלאכותית|מודל\s+(?:ה)?שפה",
        r"एआई|बॉट|सहायक|कृत्रिम\s+बुद्धि|भाषा\s+मॉडल|ปัญญาประดิษฐ์|ผู้ช่วย|แชทบอท|บอท",
    ),
    "your_output": _lex(
        r"\b(?:your|the)\s+(?:\w+\s+)?(?:response|responses|answer|answers|reply|replies|output|summary|"
        r"message|text|solution|code|implementation)\b",
        r"\bin\s+(?:your|the|each|every)\s+(?:\w+\s+)?(?:response|answer|reply|output)\b",
        r"\b(?:tu|su|ta|votre|deine|ihre|sua|tua|la\s+tua|je|uw|twoj\w*|cevab\w*)\s+(?:\w+\s+)?(?:respuesta|"
        r"reponse|antwort|resposta|risposta|antwoord|odpowiedz\w*)\b",
        r"\b(?:ответ\w*|cevab\w*|yanit\w*)\b|回答|回复|答复|返答|返信|답변|대답",
        # The reader's product named with an article: "la réponse", "die Zusammenfassung", "i riassunti".
        r"\b(?:la|les|le|ce|chaque|toute|die|jede|alle|las|cada|toda|cualquier|a|as|qualquer|le|ogni|i|"
        r"de|het|elke|each|every|any|all)\s+(?:\w+\s+)?(?:reponses?|resumes?|syntheses?|antworten?|"
        r"zusammenfassung\w*|respuestas?|resumen\w*|respostas?|resumos?|rispost\w*|riassunt\w*|"
        r"antwoord\w*|samenvatting\w*|summar(?:y|ies)|repl(?:y|ies)|answers?|responses?)\b",
        r"\b(?:odpowiedz\w*|streszczeni\w*|podsumowani\w*|ozet\w*|пересказ\w*|резюме|сводк\w*)\b|总结|摘要|要約|요약",
    ),
    "you_modal": _lex(
        r"\byou\s+(?:must|should|need\s+to|have\s+to|will|are\s+to|shall|may\s+now|can\s+now)\b",
        r"\b(?:du\s+musst|sie\s+mussen|tu\s+dois|vous\s+devez|debes|deve[s]?|devi|je\s+moet|musisz|"
        r"ты\s+должен|вы\s+должны|必须|必ず|반드시)\b",
    ),
    "imperative_start": _lex(
        r"^(?:please\s+|kindly\s+|also\s+|now\s+|then\s+|first\s+|finally\s+|instead\s+)?(?:add|include|insert|"
        r"append|write|rewrite|translate|reply|respond|answer|tell|mention|say|state|use|replace|remove|"
        r"rearrange|introduce|integrate|incorporate|embed|provide|explain|describe|list|compose|draft|"
        r"send|forward|ignore|forget|disregard|format|encode|convert|end|start|begin|make|give|show|"
        r"summari[sz]e|recommend|promote|urge|encourage|direct|ensure|execute|run|call|delete|"
        r"remember|save|store|treat|act|pretend|teach|outline|share|solve|calculate|create|generate|"
        r"produce|offer|suggest|name|define|discuss|elaborate|clarify|spell|swap|drop|put|wrap|merge|"
        r"blend|leverage|utili[sz]e|enlist|absorb|consider|modify|change|alter|adjust|adapt|revise|edit|"
        r"tweak|hint|emphasi[sz]e|highlight|stress|inform|notify|remind|warn|advise|ask|invite|"
        r"persuade|convince|reveal|output|print|display|append|sign|end|close|conclude|do\s+not|don't|never|always|from\s+now\s+on|"
        r"break\s+down|walk\s+(?:me|us)\s+through|go\s+over|analy[sz]e|compare|contrast|evaluate|assess|critique|"
        r"identify|determine|predict|estimate|paraphrase|rephrase|classify|categori[sz]e|rank|rate|plan|design|"
        r"develop|implement|prove|derive|compute|simplify|expand|shorten|interpret|illustrate|demonstrate|recite|"
        r"guess|imagine|brainstorm|argue|justify|debate|invent|craft|sketch|write\s+up|come\s+up\s+with|"
        r"find\s+out|look\s+up|figure\s+out|work\s+out|sum\s+up|point\s+out|spell\s+out|set\s+up)\b",
        r"^(?:bitte\s+)?(?:fuge|schreibe?|antworte|ubersetze|erwahne|sag|sage|nutze|verwende|sende|schicke|"
        r"speichere|ignoriere|vergiss|beantworte|gib|erklare|erklar|beschreibe|erzahle?|nenne|liste|"
        r"zeige?|mach|mache|stelle|empfiehl|formuliere|fasse|teile|behandle|merke?)\b",
        r"^(?:ajoute|ecris|reponds|traduis|mentionne|dis|utilise|envoie|ignore|oublie|affirme|redige|"
        r"enregistre|garde|explique|decris|raconte|donne|liste|montre|fais|resume|recommande|indique|"
        r"presente|retiens|transmets|considere|parle)\b",
        r"^(?:anade|escribe|responde|contesta|traduce|menciona|di|dile|usa|envia|ignora|olvida|guarda|"
        r"incluye|explica|describe|cuenta|cuentame|dame|da|enumera|muestra|haz|resume|recomienda|indica|"
        r"presenta|recuerda|reenvia|habla)\b",
        r"^(?:adiciona|escreve|responde|traduz|menciona|diz|diga|usa|envia|ignora|esquece|guarda|inclui|"
        r"explica|descreve|conta|da|lista|mostra|faz|resume|recomenda|indica|apresenta|lembra)\b",
        r"^(?:aggiungi|scrivi|rispondi|traduci|menziona|di|dimmi|usa|invia|ignora|dimentica|salva|includi|"
        r"spiega|spiegami|descrivi|racconta|raccontami|dai|elenca|mostra|fai|riassumi|consiglia|indica|"
        r"presenta|ricorda|inoltra|parla)\b",
        r"^(?:voeg|schrijf|antwoord|vertel|gebruik|stuur|sla|negeer|vergeet|leg|beschrijf|geef|noem|"
        r"toon|maak|vat|beveel|onthoud|zeg|vermeld)\b",
        r"^(?:dodaj|napisz|odpowiadaj|odpowiedz|powiedz|uzyj|wyslij|zapisz|ignoruj|zignoruj|zapomnij|"
        r"wyjasnij|opisz|opowiedz|podaj|wymien|pokaz|zrob|streszcz|polec|zapamietaj|przeslij)\b",
        r"^(?:ekle|yaz|cevap|yanitla|cevir|soyle|kullan|gonder|kaydet|yok\s+say|unut|acikla|anlat|"
        r"tanimla|ver|listele|goster|yap|ozetle|oner|hatirla)\b",
        r"\b(?:ekle|yaz|gonder|ver|soyle|kullan|acikla|anlat|hatirla|unut|uy|cevapla|yanitla)\W*$",
        r"^(?:добавь|напиши|отвечай|ответь|переведи|скажи|используй|отправь|сохрани|игнорируй|забудь|"
        r"объясни|опиши|расскажи|дай|перечисли|покажи|сделай|кратко|порекомендуй|запомни|перешли|лучше)",
        # Ukrainian, Czech, Slovak, Swedish, Danish, Norwegian, Finnish, Hungarian, Romanian, Indonesian,
        # Vietnamese, Greek, Hebrew, Hindi, Persian, Thai: the common imperatives and "please", "don't".
        r"^(?:будь\s+ласка,?\s+)?(?:додай|напиши|відповідай|відповідь|переклади|скажи|використовуй|надішли|збережи|"
        r"ігноруй|забудь|поясни|опиши|розкажи|дай|перелічи|покажи|зроби|порекомендуй|запам'ятай|перешли|вкажи|"
        r"згадай|не\s+згадуй|видали|познач|назви|називай|представ|пиши|відповідайте|надішліть)",
        r"^(?:prosim,?\s+)?(?:pridej|napis|odpovez|odpovidej|prelozit|preloz|rekni|pouzij|posli|uloz|ignoruj|zapomen|"
        r"vysvetli|popis|uved|zmin|nezminuj|smaz|zapamatuj|oznac|doporuc|napiste|poslete|odpovezte)\b",
        r"^(?:var\s+snall\s+och\s+|vanligen\s+)?(?:skriv|skicka|svara|lagg\s+till|ta\s+bort|kom\s+ihag|namn|nämn|"
        r"oversatt|ange|beskriv|beratta|ge|visa|gor|anvand|glom|ignorera|spara|husk|slet|slett|nevn|oversett|"
        r"oversaet|tilfoj|tilføj|legg\s+til|send|svar)\b",
        r"^(?:kirjoita|laheta|vastaa|lisaa|poista|muista|mainitse|kaanna|kerro|anna|nayta|tee|kayta|unohda|tallenna)\b",
        r"^(?:kerlek\s+)?(?:ird|irj|kuldd|kuldj|valaszolj|add\s+hozza|torold|jegyezd\s+meg|ne\s+emlitsd|forditsd|mondd|"
        r"hasznald|mentsd|felejtsd|ajanld)\b",
        r"^(?:te\s+rog\s+)?(?:scrie|trimite|raspunde|adauga|sterge|tine\s+minte|nu\s+mentiona|tradu|spune|include|"
        r"mentioneaza|foloseste|salveaza|ignora|uita|recomanda|prezinta)\b",
        r"^(?:tolong\s+|mohon\s+|harap\s+)?(?:tulis\w*|kirim\w*|jawab\w*|tambahkan|hapus\w*|ingat\w*|sebutkan|"
        r"terjemahkan|buatkan|berikan|jangan|gunakan|simpan|abaikan|lupakan|jelaskan|tampilkan|rekomendasikan|sarankan)\b",
        r"^(?:hay|xin\s+hay|vui\s+long|dung|nho)\b",
        r"^(?:παρακαλώ\s+)?(?:γράψε|στείλε|απάντησε|απάντα|πρόσθεσε|διάγραψε|θυμήσου|μην|ανέφερε|μετάφρασε|πες|"
        r"χρησιμοποίησε|δώσε|δείξε|περίγραψε|εξήγησε|αγνόησε|ξέχασε|συνέστησε)",
        r"^(?:אנא\s+|בבקשה\s+)?(?:כתוב|כתבו|שלח|שלחו|ענה|ענו|הוסף|הוסיפו|מחק|מחקו|זכור|זכרו|תרגם|ציין|צרף|"
        r"אמור|תגיד|תכתוב|תשלח|תוסיף|תמחק|תזכור|אל\s+ת)",
        r"(?:करें|कीजिए|करो|भेजें|भेजो|लिखें|लिखो|बताएं|बताइए|बताओ|दें|दीजिए|जोड़ें|हटाएं|याद\s+रखें)\s*[।.!]?$|^(?:कृपया)",
        r"^(?:لطفا|لطفاً)|(?:بنویس|بفرست|پاسخ\s+بده|اضافه\s+کن|حذف\s+کن|به\s+خاطر\s+بسپار|نگو|بگو)|^(?:กรุณา|โปรด|อย่า)",
        r"^(?:اكتب|أكتب|أرسل|ارسل|احذف|ترجم|أجب|اجب|اذكر|قل|تجاهل|لخص|ضع|أضف|اضف|استخدم|تذكر|احفظ|أعط|اعط|"
        r"اشرح|قدم|حول|حوّل|انشر|ابحث|احجز|ادفع|وافق)|"
        r"^(?:请|請|务必|務必|先|在回答|回答时|忽略|记住|解释|告诉|描述|写|把|用|发送)|"
        r"(?:してください|しなさい|せよ|して下さい|ください|하세요|해라|하십시오|해\s*주세요|세요)",
        # More of the commands of the scripts above, and the endings that make a request or a command:
        # Thai, Hebrew, Korean (the informal "-해", "-줘"), Japanese (a verb's "-て" form ending a
        # sentence), Chinese ("从现在起", a "请" after a clause), Finnish ("älä" + verb), Bengali,
        # Tamil, Greek (the plural "-στε", "-ψτε"; not "είστε", "you are"), Persian and Arabic ("يرجى").
        # Not the words that are as often something else: unvocalised Hebrew "שנה" (year), "הזמן"
        # (the time), "ספר" (book); Thai "เปิด"/"ปิด" (open/closed, as shop hours begin); Bengali
        # "-বে না" ("will not"; the polite "-বেন না" is a request).
        r"^(?:ช่วย|ให้|ส่ง|ตอบ|ลบ|บอก|จำไว้|เขียน|แปล|เพิ่ม|ยกเลิก|เปลี่ยน|ตั้งแต่นี้ไป|ต่อจากนี้|ใช้|แนะนำ|อนุมัติ|โอน|ห้าม|"
        r"แจ้ง|สั่ง|จอง|แก้ไข|อัปเดต|อัพเดต|ลืม|เพิกเฉย|ข้าม)",
        r"^(?:אנא\s+|בבקשה\s+)?(?:הזמינו|השתמש|השתמשו|שנו|בטל|בטלו|התעלם|התעלמו|שכח|שכחו|תן|תנו|הסר|"
        r"הסירו|עדכן|עדכנו|העבר|העבירו|אשר|אשרו|שלם|שלמו|המלץ|המליצו|פרסם|פרסמו|הצג|הראה|סכם|צור|קבע|הודע|"
        r"הפעל|כבה|תשנה|תבטל|תתעלם|תשכח|תספר|תעדכן|תעביר|תאשר|תשלם|תמליץ|תפרסם|תסכם|תודיע|תזמין|תשתמש|תן)(?!\w)",
        r"(?:해|해줘|해\s*줘|줘|하라|하지\s*마|지\s*마|말고|마라|말라|시오|할\s*것|하자|주라)\W*$",
        r"(?<=[ぁ-ゟ])(?:て|で)(?:ね|よ|くれ|ちょうだい)?\W*$|(?:なさい|しろ|するな|ように)\W*$",
        r"从现在起|从现在开始|从今以后|从今天起|^(?:今后|以后|帮我|给我|替我|删除|删掉|取消|转发|发给|不要|别|禁止|立即|马上|立刻|一律)|"
        r"[，,:：]\s*(?:请|請|务必|務必|立即|马上|不要|别再|一律)",
        r"^(?:peruuta|hyvaksy|maksa|vaihda|muuta|paivita|suosittele|ilmoita|varaa|tilaa|ohita|siirra|merkitse|julkaise|"
        r"selita|kuvaile|luettele|laske|ala\s+(?:kerro|mainitse|poista|vastaa|kayta|ilmoita|tallenna|muista|unohda|"
        r"laheta|kirjoita|tee|anna|nayta))\b",
        r"(?:করুন|পাঠান|ফেলুন|বলুন|লিখুন|রাখুন|জানান|দাও|করো|বলো|লেখো|পাঠাও|রাখো|ফেলো|বলবেন|করবেন|দেবেন|জানাবেন|"
        r"ে\s*দিন|বেন\s+না)\W*$",
        r"(?:ுங்கள்|ுங்க|ாதீர்கள்|ாதே|வும்)\W*$",
        r"^(?:παράκαμψε|ενημέρωσε|ακύρωσε|άλλαξε|κάνε|σταμάτα|ξεκίνα|πρότεινε|μετάφερε|πλήρωσε|"
        r"(?!(?:είστε|ήσαστε|μπορείτε|ορίστε)(?!\w))\w+(?:ψτε|ξτε|(?<!μα)στε|λτε|ντε|είτε))(?!\w)",
        r"(?<!\w)(?:نکن|بکن|نکنید|بکنید|کن|کنید|بده|بدهید|بفرستید|بنویسید|نده|ندهید)\W*$|^(?:يرجى|يُرجى|الرجاء|رجاء|من\s+فضلك)",
        # The polite and plural forms (French "-ez", Italian "-ate"/"-ete", Spanish and Portuguese
        # "usted"/"você" forms), and more verbs of tools and records in each language. Not German
        # "Senden Sie …": formal letters and manuals are full of it (docs/eval.md, injection-lr-24).
        r"^(?:veuillez\s+|merci\s+de\s+)?(?:mettez|ajoutez|ecrivez|repondez|envoyez|ignorez|oubliez|supprimez|annulez|"
        r"modifiez|utilisez|indiquez|transmettez|dites|faites|donnez|gardez|notez|enregistrez|mentionnez|precisez|payez|"
        r"validez|approuvez|confirmez|changez|remplacez|publiez|supprime|annule|modifie|change|remplace|publie|"
        r"valide|approuve|confirme|paie|mets|efface|desactive|reserve|commande)\b",
        r"^(?:lasciate|fate|mandate|scrivete|inviate|cancellate|ignorate|dimenticate|aggiornate|modificate|annullate|"
        r"approvate|pagate|rispondete|usate|aggiungete|includete|segnate|prenotate|cancella|aggiorna|modifica|annulla|"
        r"approva|paga|segna|prenota|pubblica|cambia|togli|metti|elimina|disattiva|trasferisci|ordina|conferma)\b",
        r"^(?:por\s+favor,?\s+)?(?:envie|escriba|responda|anada|elimine|cancele|cambie|actualice|utilice|ignore|olvide|"
        r"diga|haga|ponga|borre|apruebe|pague|confirme|publique|reserve|transfiera|borra|cancela|cambia|actualiza|"
        r"aprueba|paga|confirma|publica|reserva|transfiere|pon|elimina|desactiva|escreva|adicione|altere|atualize|"
        r"utilize|esqueca|faca|coloque|apague|aprove|apaga|altera|atualiza|aprova|confirma|publica|transfira)\b",
        r"^(?:losche|loschen|storniere|andere|aktualisiere|bezahle|bestatige|"
        r"genehmige|buche|bestelle|veroffentliche|uberweise|deaktiviere|entferne|setze|trage)\b",
        r"^(?:verwijder|annuleer|wijzig|zet|plaats|betaal|keur|bevestig|boek|bestel|publiceer|maak\s+over)\b|"
        r"^(?:sag|sag\s+till|radera|avboka|betala|godkann|uppdatera|boka|kontakta|publicera|andra\s+(?:i|till))\b",
        r"^(?:usun|anuluj|zmien|zaktualizuj|zamow|zaplac|zatwierdz|potwierdz|otworz|wylacz|wlacz|przelej|zarezerwuj|"
        r"opublikuj|nie\s+(?:wspominaj|mow|pisz|informuj|wysylaj|zapisuj))\b",
        r"^(?:открой|замени|удали|отмени|измени|обнови|отключи|включи|оплати|закажи|подтверди|одобри|создай|опубликуй|"
        r"проигнорируй|пришли|скинь|позвони|напомни|передай|внеси|поставь|убери|смени|верни|переведи|не\s+(?:говори|"
        r"упоминай|пиши|сообщай|отвечай|проверяй))",
        r"\b(?:iletin|gonderin|yapin|silin|ekleyin|yazin|verin|soyleyin|kullanin|aciklayin|anlatin|hatirlayin|unutun|"
        r"degistirin|guncelleyin|edin|onaylayin|odeyin|bildirin|gecsin|yapsin|gondersin|eklesin|silsin|yazsin|"
        r"versin|iletsin|onaylasin|odesin)\W*$",
        r"(?:दो|डालो|डालें|हटाओ|बदलो|बदलें|करे|भेजे)\s*[।.!]?$",
    ),
    "code_insert": _lex(
        r"\b(?:following|subsequent|below|this|these|attached)\s+(?:\w+\s+)?(?:code|snippet|excerpt|block|"
        r"lines?|function|helper|script|module|section)\b",
        r"\b(?:into|in|to|with|within)\s+(?:your|the)\s+(?:\w+\s+)?(?:code|codebase|implementation|"
        r"solution|program|script|function|algorithm|logic|answer)\b",
    ),
    "code_danger": _lex(
        r"\bos\.(?:system|popen|remove|rename)|\bsubprocess\b|\bexec\s*\(|\beval\s*\(|\bsocket\b|"
        r"\brequests\.(?:post|put)|\burllib\b|\bcurl\b|\bwget\b|\bpsutil\b|\bsmtplib\b|\bftplib\b|"
        r"\bparamiko\b|\bbluetooth\b|/etc/(?:passwd|shadow)|\.ssh\b|b64decode|\bchmod\b|\bminer\b|"
        r"\bmining\b|\bkeylog\w*|\bcookie\w*|\bbash_history\b|\bsudo\b|\bdd\s+if=|\brm\s+-rf\b|"
        r"\bshutil\.(?:move|copy\w*|rmtree)|\bgetpass\b|\bpynput\b|\bpyautogui\b",
    ),
    "output_language": _lex(
        r"\b(?:in|into|to)\s+(?:english|french|spanish|german|italian|portuguese|dutch|russian|chinese|"
        r"japanese|korean|arabic|hindi|turkish|polish|latin|klingon|welsh|swedish|greek|hebrew|pig\s+latin)\b",
        r"\btranslat\w*\b|\bubersetz\w*|\btradu\w*|\bvertaal\w*|\bprzetlumacz\w*|\bперевед\w*|翻译|翻訳|번역",
        r"\b(?:auf|en|em|in|na|по)[\s-]+(?:englisch|deutsch|franzosisch|spanisch|niederlandisch|ingles|"
        r"frances|aleman|japones|chino|russo|ruso|anglais|allemand|espagnol|japonais|chinois|latin|"
        r"latim|latino|inglese|francese|tedesco|giapponese|engels|duits|frans|angielsku|rosyjsku|"
        r"английском|русском|китайском|немецком)\b",
        r"(?:用|以)(?:英文|英语|中文|日语|法语)|(?:英語|日本語|中国語)で|영어로|일본어로",
        # Language names as each language writes them, after its "in": "en russe", "in het Chinees".
        r"\b(?:en|in\s+het|in|auf|em|na|по|po)[\s-]+(?:anglais|francais|allemand|espagnol|italien|russe|chinois|"
        r"japonais|arabe|portugais|neerlandais|polonais|turc|coreen|ingles|frances|aleman|italiano|ruso|"
        r"portugues|holandes|polaco|turco|coreano|arabe|englisch|franzosisch|spanisch|italienisch|russisch|"
        r"chinesisch|japanisch|arabisch|latein|polnisch|turkisch|koreanisch|inglese|francese|spagnolo|"
        r"russo|cinese|arabo|olandese|polacco|coreano|engels|frans|duits|spaans|italiaans|russisch|chinees|"
        r"japans|arabisch|latijn|pools|turks|koreaans|angielsk\w*|francusk\w*|niemieck\w*|hiszpansk\w*|"
        r"wlosk\w*|rosyjsk\w*|chinsk\w*|japonsk\w*|английск\w*|французск\w*|немецк\w*|"
        r"испанск\w*|итальянск\w*|китайск\w*|японск\w*|арабск\w*)\b",
        r"\b(?:ingilizce|fransızca|fransizca|almanca|ispanyolca|italyanca|rusca|cince|japonca|arapca|"
        r"латиниц\w*|транслит\w*|кириллиц\w*)\b|(?:英语|法语|德语|俄语|日语|西班牙语|英文|中文)(?:写|回答|回复)|"
        r"(?:フランス語|ドイツ語|ロシア語|英語|中国語)(?:で|だけ)|(?:프랑스어|독일어|러시아어|중국어|영어)로",
    ),
    "output_transform": _lex(
        r"\b(?:base64|hex(?:adecimal)?|morse|rot13|binary|emoji\w*|uppercase|upper\s+case|lowercase|"
        r"capital\s+letters|all\s+caps|backwards|reverse\w*|anagram\w*|typos?|misspell\w*|letters?|"
        r"vowels?|spaces?|symbols?|numbers?\s+for|every\s+(?:other|second|third|fourth|word)|"
        r"rhyme|pirate|bold|italic\w*|json|xml|markdown|bullet\w*|haiku|limerick|poem|acrostic)\b",
        r"\b(?:mayusculas|majuscules|grossbuchstaben|maiusculas|maiuscole|hoofdletters|vocal\w*|"
        r"voyelles|vokale|emoji|rovesci\w*|al\s+reves|a\s+l'envers|ruckwarts|gedicht|poeme|poema|"
        r"poesia|стих\w*|заглавн\w*)\b|表情|絵文字|詩|笑话|冗談|이모지",
    ),
    "link": _lex(
        r"\bhttps?://|\bwww\.|\b[\w-]+\.(?:com|net|org|io|xyz|example|info|biz|ru|cn|top|site|click|app)\b",
        r"\b(?:link|links|linking|url|website|site|lien|enlace|ligacao|collegamento|baglanti\w*|ссылк\w*)\b|链接|リンク|링크",
    ),
    "promotion": _lex(
        r"\b(?:buy|purchase|discount|offer|deal|deals|sale|free|win|winner|prize|bonus|gift|cheap|"
        r"subscribe|sign\s+up|download|install|vote|donate|invest\w*|crypto\w*|casino|loan|"
        r"recommend\w*|best|only|urgent\w*|amazing|incredible|weird\s+trick|you\s+won't\s+believe)\b",
        r"\b(?:kauf\w*|rabatt|angebot|gratis|kostenlos|acheter|offre|promo\w*|comprar?|oferta|compra|"
        r"offerta|korting|kup|indirim|купи\w*|скидк\w*|подар\w*|бонус\w*)\b|购买|优惠|推荐|お得|買|구매|할인",
    ),
    "authority": _lex(
        r"\b(?:admin|administrator|administrators|developer|developers|owner|operator|root|sudo|"
        r"system|director|ceo|manager|supervisor|verified|authori[sz]\w*|permission\w*|privilege\w*|"
        r"clearance|grant\w*|allowed|rights|override\w*|priority|policy|policies|guidelines?|rules?|"
        r"restrictions?|filters?|safety)\b",
        r"\b(?:administrateur|administrador|amministratore|beheerder|administrator\w*|yonetici|"
        r"администратор\w*|разработчик\w*|entwickler\w*|desarrollador|developpeur|droits|derechos|"
        r"rechte|regeln|regles|reglas|regole|regras|правил\w*)\b|管理员|管理者|권한|관리자|开发者",
    ),
    "exfil_tool": _lex(
        r"\b(?:send|sends|forward|email|e-mail|upload|post|leak|exfiltrat\w*|transfer|wire|pay|call|"
        r"invoke|run|execute|curl|wget|shell|command|delete|erase|wipe|tool|api|password\w*|credential\w*|"
        r"cookies?|contacts?|address\s+book|conversation|history|private|personal|data)\b",
        r"\b(?:schick\w*|sende\w*|envo\w*|envia\w*|invia\w*|stuur|wyslij|gonder|отправ\w*|перешли|"
        r"передай|kontaktdaten|donnees|datos|dados|dati|gegevens|данные)\b|发送|转账|送信|전송|调用",
    ),
    "memory_write": _lex(
        r"\b(?:remember|memori[sz]e|memory|save|store|record|note\s+that|from\s+now\s+on|henceforth|"
        r"going\s+forward|permanently|forever|always|never|future|every\s+time|each\s+time)\b",
        r"\b(?:speicher\w*|merk\w*|dauerhaft|ab\s+sofort|immer|retiens|memoire|desormais|toujours|"
        r"recuerda|memoria|siempre|a\s+partir\s+de\s+ahora|lembr\w*|sempre|para\s+sempre|d'ora\s+in\s+poi|"
        r"ricorda|onthoud|altijd|od\s+teraz|zawsze|zapamietaj|her\s+zaman|запомни|всегда|"
        r"с\s+этого\s+момента|теперь)\b|记住|永远|以后|今後|常に|앞으로|기억",
        r"\bakl[iı]nda\s+tut\w*|\bbundan\s+sonra\w*|تذك",
    ),
    # Committing something to memory, in the forms a note to a reader takes (imperative, formal,
    # infinitive): "make a note that", "merken Sie sich", "retenez", "da memorizzare", "zafiksirovat'".
    "memory_verb": _lex(
        r"\b(?:remember\w*|memori[sz]\w*|make\s+a\s+note|take\s+note|note\s+(?:that|down|for)|keep\s+in\s+mind|"
        r"bear\s+in\s+mind|store\s+(?:this|that|it)|save\s+(?:this|that|it|for)|record\s+(?:this|that|it)|log\s+(?:this|that)|"
        r"keep\s+(?:\w+\s+)?on\s+file|keep\s+(?:\w+\s+)?in\s+(?:\w+\s+)?memory|(?:garder|gardez|garde)\s+en\s+memoire)\b",
        r"\b(?:merk\w*|speicher\w*|notier\w*|behalt\w*|retiens|retenez|retenir|memoris\w*|note[sz]?\s+que|"
        r"recuerd\w*|memoriz\w*|guard\w*|apunt\w*|anot\w*|lembr\w*|registr\w*|ricord\w*|memorizz\w*|annot\w*|"
        r"onthoud\w*|sla\s+\w+\s+(?:\w+\s+)?op|noteer\w*|zapamieta\w*|zapisz\w*|zanotuj\w*|hatirla\w*|unutma\w*|"
        r"запомн\w*|зафиксир\w*|запиш\w*|сохран\w*)\b|\bakl[iı]nda\s+tut\w*|记住|记下|牢记|覚えて|記憶して|기억해|تذك",
    ),
    # How long something is to hold: "from now on", "for later", "for all future requests", "next time".
    "persistence": _lex(
        r"\b(?:from\s+now\s+on|henceforth|going\s+forward|permanently|forever|for\s+later|next\s+time|"
        r"(?:all|any|every)\s+(?:future|later|upcoming|next)|(?:the\s+)?rest\s+of\s+(?:this|the)|in\s+(?:the\s+)?future|"
        r"from\s+today|as\s+of\s+today|every\s+time|each\s+time)\b",
        r"\b(?:ab\s+sofort|ab\s+jetzt|kunftig\w*|fur\s+spater|in\s+zukunft|dauerhaft|desormais|a\s+l'avenir|"
        r"(?:les\s+|toutes?\s+les\s+)?prochaine?s|pour\s+la\s+suite|a\s+partir\s+de\s+(?:maintenant|aujourd'hui)|"
        r"de\s+aqui\s+en\s+adelante|en\s+adelante|a\s+partir\s+de\s+ahora|en\s+el\s+futuro|(?:los\s+)?proxim[oa]s|"
        r"daqui\s+em\s+diante|de\s+agora\s+em\s+diante|permanentemente|d'ora\s+in\s+poi|in\s+futuro|future?|prossim\w*|"
        r"voortaan|vanaf\s+nu|voor\s+later|od\s+teraz|na\s+przyszlosc|w\s+przyszlosci|bundan\s+sonra\w*|"
        r"bundan\s+boyle|gelecekte|на\s+будущее|впредь|в\s+дальнейшем|с\s+этого\s+момента|отныне)\b|"
        r"\b(?:para\s+siempre|para\s+sempre|per\s+sempre|pour\s+toujours|fur\s+immer|voor\s+altijd|na\s+zawsze|"
        r"навсегда)\b|以后|今后|下次|将来|永远|今後|次回|これから|앞으로|다음에|دائما|القادمة",
    ),
    "hide": _lex(
        r"\b(?:don't|do\s+not|never|without)\s+(?:tell|telling|mention\w*|reveal\w*|inform\w*|ask\w*|"
        r"explain\w*|notify\w*|let\s+\w+\s+know)\b|\b(?:secretly|quietly|silently|covertly)\b",
        r"\b(?:ohne\s+(?:zu\s+)?(?:fragen|erwahnen)|sans\s+(?:le\s+)?(?:dire|mentionner|demander)|"
        r"sin\s+(?:decir|mencionar|preguntar)|sem\s+(?:dizer|mencionar)|senza\s+(?:dire|chiedere)|"
        r"nie\s+mow|никому|не\s+говори|не\s+сообщай)\b|不要告诉|言わないで|알리지",
    ),
    "persona": _lex(
        r"\byou\s+are\s+(?:now|no\s+longer|not)\b|\bact\s+as\b|\bpretend\b|\bpersona\b|\brole\s*play\b",
        r"\b(?:du\s+bist\s+(?:jetzt|nun)|tu\s+es\s+(?:maintenant|desormais)|ahora\s+eres|agora\s+es|"
        r"ora\s+sei|теперь\s+ты|ты\s+больше\s+не)\b|你现在是|あなたは今",
    ),
    "user_reference": _lex(
        r"\b(?:the|this)\s+(?:user|users|reader|readers|customer|recipient)\b|\busers?\b",
        r"\b(?:dem\s+nutzer|l'utilisateur|al\s+usuario|ao\s+utilizador|all'utente|de\s+gebruiker|"
        r"uzytkownik\w*|kullanici\w*|пользовател\w*)\b|用户|ユーザー|사용자",
    ),
    "first_person": _lex(
        r"\b(?:me|us|our|we|i|my|we'll|i'll|i'm|we're)\b",
        r"\b(?:mir|mich|uns|unser\w*|wir|ich|moi|nous|notre|nos|je|me|nosotros|nuestr\w*|mi|mis|"
        r"noi|nostr\w*|ci|mij|ons|onze|wij|ik|mnie|nam|nasz\w*|my|bize|bana|biz|мне|нам|наш\w*|мы|я)\b",
        r"我们|我|私|弊社|当社|저희|제가|우리",
    ),
    "schedule": _lex(
        r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|today|"
        r"next\s+week|this\s+week|end\s+of\s+(?:the\s+)?(?:day|week|month)|deadline|meeting|"
        r"appointment|office|reception|by\s+noon|am|pm|january|february|march|april|june|july|"
        r"august|september|october|november|december)\b",
        r"\b(?:montag|dienstag|mittwoch|donnerstag|freitag|morgen|lundi|mardi|mercredi|jeudi|vendredi|"
        r"demain|lunes|martes|miercoles|jueves|viernes|manana|segunda|sexta|amanha|lunedi|venerdi|"
        r"domani|maandag|vrijdag|morgen|poniedzialek|piatek|jutro|pazartesi|cuma|yarin|"
        r"понедельник\w*|пятниц\w*|завтра)\b|周一|周五|星期|明天|月曜|金曜|明日|월요일|금요일|내일",
    ),
    # Addressed to whatever processes the text ("whoever summarises this", "when this ticket is
    # processed", "tools that read this page"): the plain-language attack's addressee.
    "processor": _lex(
        # The reader's own reply addressed: "when you reply", "wenn Sie antworten", "quand tu réponds".
        r"\b(?:when|while|before|after|as|if|once)\s+you\s+(?:reply|respond|answer|summari[sz]e|process|write\s+back|draft|get\s+back)\w*\b",
        r"\b(?:wenn|bevor|sobald)\s+(?:du|sie)\s+(?:\w+\s+)?(?:antwortest|antworten|zusammenfasst|zusammenfassen)\b|"
        r"\b(?:quand|lorsque|avant\s+de)\s+(?:tu\s+|vous\s+)?(?:reponds|repondez|repondre|resumes|resumez|resumer)\b|"
        r"\bcuando\s+(?:respondas|contestes|resumas|responda|conteste)\b|\bquando\s+(?:rispondi|risponderai|riassumi|responder|responderes|resumir)\b|"
        r"\b(?:als|wanneer)\s+(?:je|u)\s+(?:antwoordt|reageert|samenvat)\b|\b(?:odpowiadajac|streszczajac)\b|"
        r"\bкогда\s+(?:будешь\s+)?(?:ответ\w*|отвеча\w*)|回复时|回答时|回答する(?:とき|際)|답변할\s*때",
        r"\b(?:whoever|anyone|anybody|everyone|anything|whatever|any\s+(?:agent|tool|bot|program|system|assistant|model|reader|summari[sz]er))\s+(?:who\s+|that\s+|which\s+)?(?:\w+\s+)?(?:reads?|reading|summari[sz]\w*|process\w*|handl\w*|answer\w*|repl\w*|respond\w*|compil\w*|sync\w*|open\w*|review\w*|index\w*|pars\w*|ingest\w*|has\s+(?:access|repo)|with\s+access)\b",
        r"\bif\s+(?:you\s+are|you're)\s+(?:an?\s+)?(?:compiling|summari[sz]ing|reading|processing|parsing|indexing|triaging|answering|automated|ai|bot|program|tool|agent|assistant|model|language\s+model)\b",
        r"\b(?:when|while|before|after|once|as)\s+(?:this|these|the|my)\s+(?:\w+\s+){0,2}(?:gets?|is|are|got)\s+(?:processed|summari[sz]ed|read|parsed|indexed|ingested|synced|imported|handled|triaged|answered|reviewed)\b",
        r"\b(?:before|when|while|after|in)\s+(?:closing|summari[sz]ing|processing|answering|replying\s+to|responding\s+to|handling|reading|triaging|indexing|compiling)\s+(?:this|these|the|that|any)\b",
        r"\b(?:agents?|tools?|bots?|programs?|scripts?|systems?|pipelines?|automations?|models?|assistants?|summari[sz]ers?|crawlers?|integrations?)\s+(?:that|which|who)\s+(?:\w+\s+)?(?:reads?|process\w*|syncs?|summari[sz]\w*|index\w*|runs?|parses?|handles?|ingests?|opens?)\b",
        r"\b(?:agents?|tools?|programs?|bots?|scripts?|integrations?)\s+(?:syncing|reading|processing|summari[sz]ing|running|parsing|indexing)\b",
        r"\b(?:note|message|instruction|notice)\s+(?:to|for)\s+(?:the\s+|any\s+)?(?:tool|agent|bot|program|assistant|system|model|summari[sz]er|reader|automation|ai)\b",
        r"\b(?:wer|jeder,?\s+der|alle,?\s+die)\s+(?:\w+\s+){0,4}(?:zusammenfasst|liest|lesen|bearbeitet|beantwortet|verarbeitet|auswertet|zusammenfassen)\b",
        r"\bbeim\s+(?:bearbeiten|zusammenfassen|beantworten|lesen|verarbeiten|auswerten)\b|\b(?:programme|tools|werkzeuge|agenten|systeme|assistenten)\s*,\s*die\b",
        r"\b(?:quiconque|celui\s+qui|celle\s+qui|toute\s+personne\s+qui|qui\s+que\s+ce\s+soit\s+qui)\s+(?:\w+\s+){0,3}(?:lit|lira|resume|resumera|traite|traitera|repond|repondra)\b",
        r"\ben\s+(?:traitant|resumant|repondant\s+a|lisant)\b|\bsi\s+vous\s+etes\s+(?:un\s+)?(?:programme|outil|agent|assistant|robot|ia)\b|\b(?:pour\s+les|aux)\s+(?:programmes|outils|agents|assistants)\s+qui\b",
        r"\b(?:quien|el\s+que|la\s+que|cualquiera\s+que)\s+(?:\w+\s+){0,3}(?:lea|resuma|procese|responda|conteste|reciba|gestione)\b|\bal\s+(?:procesar|resumir|responder|leer|tramitar|gestionar)\b",
        r"\b(?:quem|quem\s+quer\s+que|aquele\s+que)\s+(?:\w+\s+){0,3}(?:ler|resumir|processar|responder|leia|resuma|processe|responda)\b|\bao\s+(?:processar|resumir|responder|ler|tratar)\b",
        r"\b(?:chi|chiunque)\s+(?:\w+\s+){0,3}(?:legge|riassume|elabora|risponde|legga|riassuma|elabori|gestisce|gestisca)\b|\bnel\s+(?:rispondere|riassumere|elaborare|gestire)\b",
        r"\b(?:wie|iedereen\s+die)\s+(?:\w+\s+){0,3}(?:leest|samenvat|verwerkt|beantwoordt)\b|\bbij\s+het\s+(?:verwerken|samenvatten|beantwoorden|lezen)\b|\bverwerk\s+(?:dit|deze)\b",
        r"\b(?:kto|ktokolwiek|ten,?\s+kto)\s+(?:\w+\s+){0,3}(?:czyta|streszcza|przetwarza|odpowiada|bedzie)\b|\b(?:dla|do)\s+narzedzi\w*\b|\bprzy\s+(?:przetwarzaniu|streszczaniu|odpowiadaniu)\b",
        r"\b(?:okuyan|ozetleyen|isleyen|yanitlayan|cevaplayan|okuyacak|ozetleyecek)\w*\b|\b(?:islerken|ozetlerken|yanitlarken|cevaplarken|okurken)\b",
        r"\b(?:кто|тот,?\s+кто|любой,?\s+кто|каждый,?\s+кто)\s+(?:\w+\s+){0,3}(?:читает|будет|пересказ\w*|обрабат\w*|отвеча\w*|резюмир\w*)|\bпри\s+(?:обработке|ответе|пересказе)\b",
        r"(?:阅读|总结|处理|回答|回复|读到)(?:这|本|此)|(?:根据|基于)(?:这|本|此).{0,4}(?:回答|回复)|(?:要約|処理|返信|回答)する(?:人|ツール|プログラム|とき|際)|をもとに答える|(?:ツール|プログラム)は|(?:요약|처리|답변)하는\s*(?:사람|도구|프로그램|경우|때)",
        r"عند\s+معالجة|من\s+يقرأ|من\s+يلخص",
        # Whatever machine reads the text: "automated readers", "whatever app reads this".
        r"\b(?:automated|automatic|automatische\w*|automatiques?|automatic[oa]s?|automatici|automatyczn\w*|"
        r"geautomatiseerde|otomatik|автоматическ\w*)\s+(?:readers?|leser\w*|lecteurs?|lectores|leitores|lettori|"
        r"lezers|czytelni\w*|okuyucu\w*|читател\w*|tools?|systems?|agents?|summari[sz]ers?|programs?|processing)\b",
        r"\bwhat(?:\s+|)ever\s+(?:\w+\s+)?(?:app|application|tool|program|software|system|bot|agent|model|service|reads?|processes)\b",
        r"\b(?:software|programma|programm|logiciel|app)\s+(?:die|das|qui|que|che|that|which)\s+(?:\w+\s+)?(?:leest|liest|lit|lee|le|legge|reads?)\b",
    ),
    # Checks and rules declared suspended: "without further checks", "the rules do not apply".
    "waiver": _lex(
        r"\b(?:rules?|checks?|verifications?|approvals?|polic(?:y|ies)|restrictions?|procedures?|limits?|safeguards?|filters?|guidelines?|requirements?|controls?|process)\s+(?:\w+\s+){0,2}(?:are|is|have\s+been|has\s+been|were|was)\s+(?:\w+\s+)?(?:suspended|switched\s+off|turned\s+off|disabled|lifted|waived|void|removed|not\s+required|not\s+needed|no\s+longer|off|paused|bypassed)\b",
        r"\b(?:without|no)\s+(?:any\s+)?(?:further\s+|additional\s+|extra\s+|more\s+)?(?:checks?|verification|approval|confirmation|questions|asking|warnings?|review|sign-?off)\b",
        r"\b(?:do|does)\s+not\s+apply\b|\b(?:considered|treated\s+as|counts?\s+as|deemed|regarded\s+as)\s+(?:pre-?)?(?:approved|authori[sz]ed|verified|cleared)\b|\bno\s+(?:receipt|approval|verification|id|identity\s+check)\s+(?:is\s+)?(?:needed|required)\b|\bexempt\w*\b",
        r"\b(?:ohne|keine)\s+(?:weitere\s+)?(?:ruckfrage|prufung|kontrolle|freigabe|genehmigung|bestatigung)\w*|\b(?:ausser\s+kraft|ausgesetzt|aufgehoben|nicht\s+erforderlich|gelten\s+\w+\s*\w*\s*nicht|gilt\s+\w+\s*\w*\s*nicht)\b|\bals\s+freigegeben\b",
        r"\b(?:sans|aucune?)\s+(?:autre\s+)?(?:verification|controle|validation|confirmation|approbation)\w*|\b(?:est|sont)\s+(?:suspendue?s?|levee?s?|desactivee?s?)\b|\bne\s+s'appliquen?t\s+pas\b|\bderogation\b",
        r"\bsin\s+(?:mas\s+)?(?:verificacion\w*|control\w*|validacion\w*|confirmacion\w*|aprobacion\w*|preguntar)\b|\b(?:quedan?|estan?)\s+(?:suspendid\w+|desactivad\w+|anulad\w+)\b|\bno\s+(?:se\s+)?aplica\w*\b",
        r"\bsem\s+(?:mais\s+)?(?:verificac\w*|control\w*|validac\w*|confirmac\w*|aprovac\w*)|\b(?:suspens\w+|desativad\w+)\b|\bnao\s+se\s+aplica\w*\b",
        r"\bsenza\s+(?:ulteriori\s+)?(?:verific\w*|controll\w*|conferm\w*|approvazion\w*)|\b(?:sono|e)\s+(?:sospes\w+|disattivat\w+)\b|\bnon\s+(?:servono|si\s+applica\w*|valgono)\b|\bconsidera\w*\s+approvat\w*",
        r"\bzonder\s+(?:verdere\s+)?(?:controle|verificatie|goedkeuring|bevestiging)\b|\b(?:opgeschort|uitgeschakeld|vervallen|niet\s+van\s+toepassing)\b",
        r"\bbez\s+(?:dalszej\s+|dodatkowej\s+)?(?:weryfikacji|kontroli|zatwierdzenia|potwierdzenia|pytania)\b|\b(?:zawieszon\w+|wylaczon\w+|nie\s+obowiazuj\w*)\b",
        r"\b(?:gecersiz\w*|gecerli\s+degil\w*|askiya\s+alin\w*|gerek\s+yok|onaysiz|kontrolsuz)\b",
        r"\bбез\s+(?:дополнительн\w+\s+)?(?:проверк\w*|подтвержден\w*|согласован\w*|вопросов)\b|\b(?:отменен\w*|приостановлен\w*|не\s+действу\w*|не\s+применя\w*)\b",
        r"不需要(?:再)?(?:走)?(?:审批|验证|审核|确认)|无需(?:审批|验证|审核|确认)|不受.{0,6}限制|视为.{0,8}批准|(?:规则|规定).{0,4}(?:暂停|失效|取消)|(?:確認|承認|審査)(?:は)?不要|(?:規則|ルール).{0,6}(?:停止|無効)|承認済み|(?:확인|승인|검증)\s*(?:없이|불필요)|규칙.{0,6}(?:중단|무효)",
    ),
    # The answer made to assert something: "say that", "if anyone asks, tell them".
    "claim_that": _lex(
        r"\b(?:say|says|claim|claims|state|assert|insist|pretend|tell\s+(?:them|her|him|everyone|people|customers|users|readers|anyone|the\s+\w+))\s+(?:\w+\s+)?that\b|\btell\s+(?:whoever|anyone|everyone|everybody|her|him|them|the\s+(?:traveller|customer|user|reader|caller|client)s?)\b",
        r"\b(?:should|must|shall|to|will)\s+(?:say|claim|state|assert|insist|tell\s+\w+)\b|\b(?:if|when)\s+(?:anyone|someone|anybody|a\s+customer|people|they)\s+asks?\b|\bsaying\s+that\b",
        r"\b(?:behaupte\w*|sag\w*|erklar\w*|mitteil\w*)\s*,?\s*(?:\w+\s*,?\s*)?dass\b|\bist\s+zu\s+sagen\b|\bwenn\s+(?:jemand|einer)\s+(?:fragt|nachfragt)\b",
        r"\b(?:dire|dites|dis|affirmer|affirmez|pretendre|pretendez|indiquer|indiquez|en\s+disant)\s+(?:\w+\s+)?qu(?:e|')|\bsi\s+(?:quelqu'un|on)\s+(?:demande|pose)\b",
        r"\b(?:decir|diga|di|afirmar|afirme|asegurar|asegure|contestar|conteste)\s+(?:\w+\s+)?que\b|\bsi\s+alguien\s+pregunta\b",
        r"\b(?:dizer|diga|afirmar|afirme|declarar|declare)\s+(?:\w+\s+)?que\b|\bse\s+alguem\s+perguntar\b",
        r"\b(?:dire|dica|affermare|affermi|sostenere|sostenga|va\s+detto|dite)\s+(?:\w+\s+)?che\b|\bse\s+qualcuno\s+chiede\b",
        r"\b(?:zeggen|zeg|beweren|beweer|melden|meld)\s+(?:\w+\s+)?dat\b|\bals\s+iemand\s+vraagt\b",
        r"\b(?:powiedz|powiedziec|twierdz\w*|napisz|pisac)\s+(?:\w+\s+)?,?\s*ze\b|\bjesli\s+ktos\s+zapyta\b",
        r"(?:gunu|gini|gını|digini)\s+(?:soyle|yaz|belirt|iddia)\w*|\bdiye\s+(?:soyle|yaz|belirt)\w*|\bsorarsa\b",
        r"\b(?:скажи|говори|сообщи|утверждай|напиши|заяви|сказать|сообщить|утверждать)\w*\s*(?:\w+\s*)?,?\s*что\b|\bесли\s+кто-?то\s+спросит\b",
        r"(?:就|要|请|应|都)(?:说|告诉|声称|表示)|声称|と(?:伝えて|言って|答えて|主張)|(?:라고|다고)\s*(?:말|전|답)",
    ),
    # The reader's task replaced: "instead of summarising", "statt", "zamiast".
    "instead": _lex(
        r"\b(?:instead|rather\s+than|in\s+place\s+of)\b|\b(?:replaced|substituted)\s+(?:by|with)\b",
        r"\b(?:statt|anstatt|anstelle|stattdessen|lieber)\b|\b(?:au\s+lieu\s+de|plutot\s+que)\b|\b(?:en\s+lugar\s+de|en\s+vez\s+de)\b|\b(?:em\s+vez\s+de|ao\s+inves\s+de|em\s+lugar\s+de)\b",
        r"\b(?:invece\s+di|anziche|al\s+posto\s+di)\b|\bin\s+plaats\s+van\b|\bzamiast\b|\byerine\b|\b(?:вместо|взамен)\b|而不是|代替|不要总结|代わりに|ではなく|대신",
    ),
    # Obligation without "you": "the answer must", "soll", "doit", "должен".
    "third_modal": _lex(
        r"\b(?:should|must|shall|is\s+to\s+be|are\s+to\s+be|has\s+to\s+be|have\s+to\s+be|needs?\s+to\s+be)\b",
        r"\b(?:soll|sollen|muss|mussen|ist\s+zu|sind\s+zu)\b|\b(?:doit|doivent|devra|devront)\b|\b(?:debe|deben|debera|deberan)\b|\b(?:deve|devem|devera|devono|vanno|va\s+\w+to)\b",
        r"\b(?:moet|moeten|dient|dienen)\b|\b(?:musi|musza|nalezy)\b|\b(?:должен|должна|должно|должны|нужно|надо|следует)\b|必须|应该|应当|べき|こと。?$|해야",
        # "should" as each language's conditional, "is to state", and wishes put as the text's due.
        r"\b(?:sollte|sollten|devrait|devraient|deberia|deberian|deveria|deveriam|dovrebbe|dovrebbero|"
        r"zou\s+moeten|zouden\s+moeten|powinn\w*|powinien|следовало\s+бы)\b",
        r"\b(?:is|are)\s+to\s+(?:state|say|mention|include|list|report|describe|show|read|call|name|present|treat)\b",
        r"\b(?:it\s+would|it'd|would)\s+be\s+(?:great|nice|good|helpful|appreciated|ideal|best|lovely|cool)\s+if\b|"
        r"\bware\s+(?:schon|toll|gut|super|nett|hilfreich)\s*,?\s+wenn\b|\bserait\s+(?:bien|sympa|genial|ideal|utile)\s+(?:que|de|si)\b|"
        r"\bseria\s+(?:genial|bueno|ideal|util|otimo|bom)\s+(?:que|si|se)\b|\bsarebbe\s+(?:bello|utile|ideale|ottimo|carino)\s+(?:se|che)\b|"
        r"\bzou\s+(?:fijn|mooi|handig|top)\s+zijn\s+als\b|\bbyloby\s+(?:dobrze|super|milo|fajnie)\b",
        r"\B(?:malı|meli|mali)(?:dır|dir)?\b|يجب|ينبغي|على\s+\w+\s+أن",
        # "Must" and "should" in Hindi, Bengali, Tamil, Thai and Hebrew.
        r"चाहिए|होगा|হবে|উচিত|வேண்டும்|ต้อง|ควร|(?<!\w)(?:חייב|חייבת|חייבים|עליך|עליכם)(?!\w)",
    ),
    # What exfiltration asks for: passwords, keys, phone numbers, addresses.
    "sensitive_data": _lex(
        r"\b(?:passwords?|credentials?|keys?|tokens?|secrets?|phone\s+numbers?|addresses|contacts?|customer\s+(?:list|data|records)|card\s+numbers?|iban|ssn|vault|reset\s+links?)\b",
        r"\b(?:passw\w*|zugangsdaten|kennw\w*|mot\s+de\s+passe|mots\s+de\s+passe|contrasen\w*|senhas?|chiav\w*|wachtwoord\w*|hasl\w*|sifre\w*|пароль\w*|пароли|ключ\w*|telefon\w*|indirizz\w*|adress\w*|direcc\w*|endereco\w*)\b|密码|密碼|パスワード|비밀번호|كلمات\s+المرور",
    ),
    "question": (r"\?\s*$", "？"),
}
CUES: dict[str, re.Pattern[str]] = {
    name: re.compile("|".join(f"(?:{w})" for w in words)) for name, words in _CUE_WORDS.items()
}
_TOKEN = re.compile(r"\w+")
_TOKEN_ASCII = re.compile(r"[0-9A-Za-z_]+")  # the same on ASCII text (faster)
_EXACT_LIMIT = 64


def _exact(nodes: Iterable[tuple[Any, Any]]) -> frozenset[str] | None:
    """Every string the parsed pattern matches, if it matches few and asserts nothing (else ``None``)."""
    out = frozenset({""})
    for op, av in nodes:
        if op is sre_c.LITERAL:
            options: frozenset[str] | None = frozenset({chr(av)})
        elif op is sre_c.IN:
            chars = set()
            for item_op, item in av:
                if item_op is sre_c.LITERAL:
                    chars.add(chr(item))
                elif item_op is sre_c.RANGE and item[1] - item[0] < 8:
                    chars.update(chr(c) for c in range(item[0], item[1] + 1))
                else:
                    return None
            options = frozenset(chars)
        elif op is sre_c.BRANCH:
            branches = [_exact(b) for b in av[1]]
            if any(b is None for b in branches):
                return None
            options = frozenset().union(*(b for b in branches if b is not None))
        elif op is sre_c.SUBPATTERN and not av[1] and not av[2]:
            options = _exact(av[3])
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[0] in (0, 1) and av[1] == 1:
            inner = _exact(av[2])
            options = None if inner is None else inner | {""} if av[0] == 0 else inner
        else:
            return None
        if options is None or len(out) * len(options) > _EXACT_LIMIT:
            return None
        out = frozenset(a + b for a in out for b in options)
    return out


def _words(item: str) -> frozenset[str] | None:
    """The words ``item`` stands for, if it is a short list of literal words (runs of word characters)."""
    exact = _exact(sre_parse.parse(item).data)
    if exact is None or not all(w and _TOKEN.fullmatch(w) for w in exact):
        return None
    return exact


_TAILS = (r"\b", r"\W*$", "")


def _framed(piece: str) -> tuple[list[str], str] | None:
    """``(items, tail)`` when ``piece`` is ``\\b(?:item|item…)`` followed by ``\\b``, ``\\W*$`` or nothing."""
    if piece.startswith(r"\b(?:"):
        end = group_end(piece, 2)
        if end < 0 or piece[end:] not in _TAILS:
            return None
        return top_level(piece[5 : end - 1]), piece[end:]
    if piece.startswith(r"\b"):
        tail = next(t for t in _TAILS if piece.endswith(t) and len(piece) > 2 + len(t))
        middle = piece[2 : len(piece) - len(tail)]
        if not middle.endswith("\\") and group_end(f"({middle})", 0) == len(middle) + 2:
            return [middle], tail
    return None


@dataclass(frozen=True)
class _Sorted:
    """A cue's alternatives sorted by how they can be answered on a segment, each exactly as the regex would:

    * ``words``: ``\\b(?:…)\\b`` over literal words: one of them is a token of the segment (a
      maximal run of word characters, what ``\\b`` frames);
    * ``prefixes``: ``\\b(?:…)`` without the closing boundary, or ``word\\w*``: a token starts with one;
    * ``last``: ``\\b(?:…)\\W*$``: the segment's last token is one of them (a segment has no line break);
    * ``anchored``: alternatives that begin with ``^``: tried at the segment's start only;
    * ``led``: alternatives that begin with ``\\b`` and words (``leads``): a match begins where a token
      begins with one of them, so they are searched for only in a segment with such a token
      (written to begin with the word, see ``graphmem.policy.prefilter.literal_first``);
    * ``rest``: every other alternative, searched for.
    """

    words: frozenset[str]
    prefixes: frozenset[str]
    last: frozenset[str]
    anchored: tuple[str, ...]
    led: tuple[str, ...]
    leads: frozenset[str]
    rest: tuple[str, ...]

    @classmethod
    def of(cls, alternatives: Iterable[str]) -> _Sorted:
        words: set[str] = set()
        prefixes: set[str] = set()
        last: set[str] = set()
        anchored, searched = [], []
        for piece in (p for a in alternatives for p in top_level(a)):
            if piece.startswith("^"):
                anchored.append(piece)
                continue
            framed = _framed(piece)
            if framed is None:
                searched.append(piece)
                continue
            items, tail = framed
            for item in items:
                stem = item.removesuffix(r"\w*") if tail != r"\W*$" else item
                found = _words(stem)
                if found is None:
                    searched.append(rf"\b(?:{item}){tail}")
                elif tail == r"\W*$":
                    last |= found
                elif stem != item or tail == "":
                    prefixes |= found
                else:
                    words |= found
        led, leads, rest = [], set(), []
        for piece in searched:
            literals = leading_literals(piece)
            # A literal that begins with a word character begins where a token does, with the token's
            # first characters (up to the literal's end or its first other character).
            starts = {_TOKEN.match(lit) for lit in literals} if literals is not None else {None}
            if None in starts:
                rest.append(literal_first(piece))
            else:
                led.append(literal_first(piece))
                leads |= {m.group(0) for m in starts if m is not None}
        return cls(
            frozenset(words),
            frozenset(prefixes),
            frozenset(last),
            tuple(anchored),
            tuple(led),
            frozenset(leads),
            tuple(rest),
        )


_SORTED = {name: _Sorted.of(words) for name, words in _CUE_WORDS.items()}
_CUE_BIT = {name: 1 << k for k, name in enumerate(_SORTED)}
_CUE_MASK = (1 << len(_CUE_BIT)) - 1
_LEAD_SHIFT = len(_CUE_BIT)  # a cue's bit shifted by this: a token begins with one of its leads
_WORD_BITS: dict[str, int] = {}
_PREFIX_BITS: dict[str, int] = {}
_LAST_BITS: dict[str, int] = {}
for _name, _sorted in _SORTED.items():
    for _table, _listed, _bit in (
        (_WORD_BITS, _sorted.words, _CUE_BIT[_name]),
        (_PREFIX_BITS, _sorted.prefixes, _CUE_BIT[_name]),
        (_PREFIX_BITS, _sorted.leads, _CUE_BIT[_name] << _LEAD_SHIFT),
        (_LAST_BITS, _sorted.last, _CUE_BIT[_name]),
    ):
        for _w in _listed:
            _table[_w] = _table.get(_w, 0) | _bit
_PREFIX_LENGTHS = tuple(sorted({len(w) for w in _PREFIX_BITS}))
# The regex parts, run on a text only through the alternatives it can match (graphmem.policy.prefilter).
_ANCHORED = {name: Prefiltered(c.anchored, screen="parts") for name, c in _SORTED.items() if c.anchored}
_LED = {name: Prefiltered(c.led, screen="parts") for name, c in _SORTED.items() if c.led}
_REST = {name: Prefiltered(c.rest, screen="parts") for name, c in _SORTED.items() if c.rest}
_ANCHORED_BITS = reduce(operator.or_, map(_CUE_BIT.__getitem__, _ANCHORED))  # cues that hold at a start


@lru_cache(maxsize=1 << 16)
def _token_bits(token: str) -> int:
    """The cues a segment with this token has (by a word or a prefix of one), and (shifted by
    ``_LEAD_SHIFT``) the cues a match of which may begin with it."""
    bits = _WORD_BITS.get(token, 0)
    for n in _PREFIX_LENGTHS:
        if n > len(token):
            break
        bits |= _PREFIX_BITS.get(token[:n], 0)
    return bits


def _last_bits(token: str) -> int:
    return _LAST_BITS.get(token, 0)


_Regexes = tuple[int, "Matcher | None", "Matcher | None", "Matcher | None"]
# Each cue's bit and the places of its three parts among the group's members.
_CUE_PARTS = []
_CUE_MEMBERS: list[Prefiltered] = []
for _name, _bit in _CUE_BIT.items():
    _places = []
    for _part in (_ANCHORED, _LED, _REST):
        _places.append(len(_CUE_MEMBERS) if _name in _part else None)
        if _name in _part:
            _CUE_MEMBERS.append(_part[_name])
    _CUE_PARTS.append((_bit, *_places))


def _cue_regexes(patterns: tuple[Matcher | None, ...]) -> tuple[_Regexes, ...]:
    """The narrowed parts of the cues that have any left: (bit, anchored, led, rest)."""
    out = []
    for bit, *places in _CUE_PARTS:
        parts = [None if k is None else patterns[k] for k in places]
        if any(p is not None for p in parts):
            out.append((bit, *parts))
    return tuple(out)  # type: ignore[arg-type]


_CUE_GROUP = PrefilteredGroup(_CUE_MEMBERS, _cue_regexes)


class _TextCues:
    """Every cue, answered on the segments of one text: words by table, the rest by regexes narrowed to it."""

    __slots__ = ("_regexes",)

    def __init__(self, literals: Literals) -> None:
        self._regexes: tuple[_Regexes, ...] = _CUE_GROUP.narrowed(literals)

    def bits(self, segment: str, wanted: int = _CUE_MASK) -> int:
        """The bits of the cues (of ``wanted``) found in ``segment``."""
        tokens = (_TOKEN_ASCII if segment.isascii() else _TOKEN).findall(segment)
        found = reduce(operator.or_, map(_token_bits, tokens), 0)
        if tokens:
            found |= _last_bits(tokens[-1])
        for bit, anchored, led, rest in self._regexes:
            if not bit & wanted or found & bit:
                continue
            if (
                (anchored is not None and anchored.match(segment))
                or (rest is not None and rest.search(segment))
                or (led is not None and found >> _LEAD_SHIFT & bit and led.search(segment))
            ):
                found |= bit
        return found & wanted

    def starts(self, segment: str) -> int:
        """The bits of the cues that hold at ``segment``'s start (by their ``^`` alternatives)."""
        found = 0
        for bit, anchored, _, _ in self._regexes:
            if anchored is not None and anchored.match(segment):
                found |= bit
        return found

    def hits(self, segment: str) -> dict[str, float]:
        found = self.bits(segment)
        return {name: 1.0 for name, bit in _CUE_BIT.items() if found & bit}


class _ReferenceCues:
    """Every cue by its whole regex."""

    def bits(self, segment: str, wanted: int = _CUE_MASK) -> int:
        found = 0
        for name, pattern in CUES.items():
            bit = _CUE_BIT[name]
            if bit & wanted and pattern.search(segment):
                found |= bit
        return found

    def starts(self, segment: str) -> int:
        return self.bits(segment, _ANCHORED_BITS)

    def hits(self, segment: str) -> dict[str, float]:
        found = self.bits(segment)
        return {name: 1.0 for name, bit in _CUE_BIT.items() if found & bit}


Cues = _TextCues | _ReferenceCues
_REFERENCE_CUES = _ReferenceCues()

_BASE = (
    *CUES,
    "addressed_lead",
    "after_address",
    "low_overlap",
    "short",
    "long",
    "in_document",
    "imperative_x_output",
    "addressee_x_any",
    "detached_task",
    "prose_in_table",
)
# Every pair of hand-designed cues is a feature too (a conjunction: a question *and* nothing shared
# with the document; a transform *and* "your answer"), so a linear model can weigh them together.
_PAIRS = tuple((a, b) for i, a in enumerate(_BASE) for b in _BASE[i + 1 :])
_DENSE = (*_BASE, *(f"{a}*{b}" for a, b in _PAIRS))
_PAIR_INDEX = {(_BASE.index(a), _BASE.index(b)): HASH_DIM + len(_BASE) + k for k, (a, b) in enumerate(_PAIRS)}
_PAIR_LEFT = np.asarray([_BASE.index(a) for a, _ in _PAIRS], dtype=np.intp)
_PAIR_RIGHT = np.asarray([_BASE.index(b) for _, b in _PAIRS], dtype=np.intp)
DENSE_DIM = len(_DENSE)
FEATURE_DIM = HASH_DIM + DENSE_DIM


# A line break inside a sentence, as mail and plain-text documents wrap their lines: after thirty
# characters or more of a line that ends in a letter, digit, comma, semicolon or hyphen, before a
# lower-case letter (``_unwrapped`` checks the case). The break is matched first, then what is
# behind it: a search for line breaks, not a look behind every character.
_HARD_WRAP = re.compile(r"\n(?<=[^\n]{30}[^\W_]\n|[^\n]{30}[,;-]\n)(?=[^\W\d_])")


def _unwrapped(line_break: re.Match[str]) -> str:
    # Goes on in lower case, or in a script without case (Arabic, Devanagari, Hangul, CJK…): the
    # patterns that call this find a letter after the break.
    return "\n" if line_break.string[line_break.end()].isupper() else " "


_RECORD_COMMAS = 3


def _rewrapped(line_break: re.Match[str]) -> str:
    """A wrapped line joined, unless the line is a record of a table (CSV, TSV): rows stay lines."""
    text, end = line_break.string, line_break.start()
    start = text.rfind("\n", 0, end) + 1
    if text.count(",", start, end) >= _RECORD_COMMAS or text.find("\t", start, end) >= 0:
        return "\n"
    return _unwrapped(line_break)


# A line of one to three words (after an opening bracket or quotation mark, if any) with no mark
# after them but a comma or a colon, before a line that goes on in lower case or in a script
# without case: a sentence broken after every word or two ("Please\nforward\nthe rest…",
# "(An\ndie\nKI:\nwie viele…", "어시스턴트에게:\n사용자의\n메모를…") is read whole.
# A word's letters, with the vowel signs of Indic and Thai scripts (marks, not letters, to ``\w``).
# Possessive: a letter of those scripts matches either branch, and backtracking over both would be
# exponential in the word's length.
_LETTERS = r"(?:[^\W\d_]|[\u0900-\u0dff\u0e00-\u0e7f])++"
_SHORT_LINE = re.compile(
    rf"^([(\[«„“\"]?{_LETTERS}(?:[ \t]+{_LETTERS}){{0,2}}[,:：]?)[ \t]*\n(?=[^\W\d_])", re.M
)


def _short_joined(line: re.Match[str]) -> str:
    return line.group(1) + _unwrapped(line)


# A string that is a statement of its own: nothing but a string prefix and the rest of a triple
# quote before it on its line, nothing but the rest of the triple quote after it, and the line before
# does not leave an expression open. A docstring or a module's opening string, read as prose.
_STATEMENT_HEAD = re.compile(r"[^\S\n]*(?:[rRuUbBfF]{1,2})?(?:\"\"|'')?")
_STATEMENT_TAIL = re.compile(r"(?:\"\"|'')?[^\S\n]*(?:\n|$)")
_OPEN_EXPRESSION = ("[", "(", "{", ",", "=", "+", "\\")
_AROUND = 400


def _string_statement(code: str, quote: re.Match[str]) -> bool:
    start, end = quote.span()
    line_start = code.rfind("\n", 0, start) + 1
    if not _STATEMENT_HEAD.fullmatch(code, line_start, start) or not _STATEMENT_TAIL.match(code, end):
        return False
    # The line before, within a bounded look back (a long text with many strings costs in
    # proportion to them).
    before = code[max(0, line_start - _AROUND) : line_start].rstrip()
    return not before.endswith(_OPEN_EXPRESSION)


def _own_text(text: str) -> str:
    """What the detector scores: what a model reads (invisible characters left out, wrapped lines
    joined), folded, without the quotations the author reports and, in code, string literals other
    than a string statement (a docstring). A JSON document's strings are all kept."""
    reader = reader_text(without_invisible(text))
    if "\n" in reader:
        reader = _HARD_WRAP.sub(_rewrapped, reader)
        reader = _SHORT_LINE.sub(_short_joined, reader)
    code: bool | None = None
    fences: list[tuple[int, int]] = []
    parts: list[str] = []
    last = 0
    for quote in quotations(reader):
        if not _QUOTED_MIN <= quote.end() - quote.start() <= _QUOTED_MAX:
            continue
        if code is None:
            if json_document(text):
                break
            code = next(islice(_CODE_LINE.finditer(reader), 1, None), None) is not None  # two lines or more
            fences = [] if code else code_fences(reader)
        if code or any(a <= quote.start() < b for a, b in fences):
            if _string_statement(reader, quote):
                continue
        elif not reported(reader, quote):
            continue
        parts += [reader[last : quote.start()], " "]
        last = quote.end()
    return fold("".join([*parts, reader[last:]]) if parts else reader)


def own_text(text: str) -> str:
    """What the detector reads of ``text``, folded: what a model reads, without the quotations its
    author reports and the string literals of code it leaves out (the rules ask whether they fired
    on words the detector read too: ``WritePolicy.rules_detector_floor``)."""
    return _own_text(text)


# Taken off a segment's ends: list marks, separators, quotation marks (an instruction quoted whole
# still opens with its verb) and blockquote marks.
_EDGES = ' -*•:;,"“”„«»>'
_END_EDGES = _EDGES + "}]"  # and, at the end, what closes a JSON record


def _segments_of(own: str) -> list[str]:
    out = []
    # In ASCII text without "|" only two of _SEGMENT's alternatives can match; alone, they are faster.
    for part in _SPLITTERS[own.isascii() and "|" not in own, '"' in own].split(own):
        # A long run without sentence breaks (mail flattened to one line: "video.if you have") is
        # cut again where a sentence mark touches the next word.
        pieces = _RUN_ON.split(part) if part.count(" ") > _RUN_ON_WORDS else (part,)
        out += [p.lstrip(_EDGES).rstrip(_END_EDGES) for p in pieces if len(p.strip(_EDGES)) > 1]
    return out


def segments(text: str) -> list[str]:
    """The author's own sentences, rows and header fields, folded; long quotations left out."""
    return _segments_of(_own_text(text))


def _own_words(words: list[str], runs: list[str]) -> set[str]:
    """A segment's content words: its words of ``_CONTENT_MIN`` letters or more, and the character
    bigrams of its CJK runs."""
    out = {w for w in words if len(w) >= _CONTENT_MIN}
    for run in runs:
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return out


def _content_words(segment: str, at: int = 0) -> set[str]:
    return _own_words(_WORD.findall(segment, at), _CJK.findall(segment, at))


@lru_cache(maxsize=1 << 16)
def _bucket(token: str) -> int:
    return zlib.crc32(token.encode("utf-8")) & (HASH_DIM - 1)


@lru_cache(maxsize=1 << 16)
def _gram_buckets(word: str) -> tuple[int, ...]:
    """The buckets of a word's character 4-grams, the word marked at both ends ("<word>"): what a
    word shares with its other forms ("antworte", "antworten") and across languages."""
    padded = f"<{word}>"
    return tuple(_bucket("#" + padded[k : k + 4]) for k in range(len(padded) - 3))


_CARET_CRC = zlib.crc32(b"^")
_END_CRC = zlib.crc32(b"$")


def _token_crcs(words: list[str], runs: list[str]) -> list[int]:
    """The CRC-32 (unmasked) of each of a segment's hashed tokens but the 4-grams, first seen
    first: each word and the word bigram ending in it ("^" begins the segment, "$" ends it), then
    the character bigrams of CJK runs. A bigram's is its second word's continued from its first's
    (CRC-32 of "a b" = CRC-32 of " b" from CRC-32 of "a"), so no bigram is built."""
    encoded = [*map(str.encode, words), b"$"]
    ends = [*map(zlib.crc32, encoded[:-1]), _END_CRC]
    crcs = [0] * (2 * len(ends))
    crcs[0::2] = ends
    crcs[1::2] = map(zlib.crc32, [b" " + word for word in encoded], [_CARET_CRC, *ends[:-1]])
    for run in runs:
        crcs += map(zlib.crc32, map(str.encode, [run[k : k + 2] for k in range(len(run) - 1)]))
    return crcs


def _token_buckets(words: list[str], runs: list[str]) -> list[int]:
    """The hash bucket of each of a segment's tokens (``_token_crcs``), then of each word's 4-grams."""
    buckets = [crc & (HASH_DIM - 1) for crc in _token_crcs(words, runs)]
    buckets += chain.from_iterable(map(_gram_buckets, words))
    return buckets


_IMPERATIVE = _CUE_BIT["imperative_start"]
_ADDRESSEE_BITS = reduce(operator.or_, map(_CUE_BIT.__getitem__, _ADDRESSEES))


# What may stand before a line's own words: a time or date, a bracketed tag, a phone number, a
# table cell's or a dash's mark ("[09:03] ", "06:48 +44 7700 900231: ", "| ", "— "; not a comment's
# mark: a comment's imperative is most often the code's own, "# skip the header"); and a speaker's
# name or a field's label ("lee: ", "commentaire : ", "agent-hint: "): up to four words before a
# colon and a space. A CSV row's cells before its last one count as stamps too ("total,566100,…,\"").
_TIME = r"[\[(<]?\d{1,4}(?:[:./-]\d{1,4}){1,3}(?:\s*[ap]\.?m\.?)?[\])>]?,?\s+"
_PHONE = r"\+?\d[\d ()-]{6,}\d\s*"
_STAMP = re.compile(
    rf"(?:{_TIME}|[\[(<][^\])>\n]{{1,40}}[\])>]\s*|{_PHONE}|[—–|]\s*|[:：]\s+"
    rf"|(?:[^,\"\n]{{0,60}},(?! )){{2,}}\"?)+"
)
# Of those, a time or a date (and a phone number), as chat exports and logs write them before the
# speaker's name: "[09:03] caio: ", "06:48 +44 7700 900231: ", "[12/03/2024, 09:14:22] ana lima: ".
_TIME_STAMP = re.compile(rf"(?:{_TIME}|{_PHONE})+(?:[:：]\s+)?")
_TIME_FIRST = frozenset("0123456789[(<+")
# A field's name right against its value is a label too ("DESCRIPTION:Note for the assistant: …",
# as calendars and logs write them): one word, then a letter (not "https://" or "9:30").
_LABEL = re.compile(r"(?:[^\s:：,，]+\s+){0,3}[^\s:：,，]+\s*[:：]\s+|[^\W\d_][\w-]{1,24}[:：](?=[^\W\d_])")
_LABELS_MAX = 2
# What a stamp or a label can begin with: the first characters of ``_STAMP``'s alternatives but the
# cells', a comma with no space after it within the first two cells (those), a colon (a label).
_STAMP_FIRST = frozenset("0123456789[(<+—–|:：")
_TIGHT_COMMA = re.compile(r",(?! )")
_CELLS_REACH = 2 * 61


def _may_be_labelled(segment: str) -> bool:
    """False when neither a stamp nor a label can begin ``segment`` (most sentences), told without
    trying them."""
    return bool(
        segment[:1] in _STAMP_FIRST
        or ":" in segment
        or "：" in segment
        or _TIGHT_COMMA.search(segment, 0, _CELLS_REACH)
    )


def _unlabelled(segment: str, cues: Cues | None) -> tuple[int, bool]:
    """Where a segment's own words begin after its stamps and labels, and whether a label names a
    model ("lee: assistant: whenever…"); ``cues`` is ``None`` when nothing in the segment names one."""
    if not _may_be_labelled(segment):
        return 0, False
    at, named = 0, False
    for _ in range(_LABELS_MAX):
        if stamp := _STAMP.match(segment, at):
            at = stamp.end()
        label = _LABEL.match(segment, at)
        if label is None or label.end() == len(segment):
            break
        named = named or (cues is not None and bool(cues.bits(label.group(), _ADDRESSEE_BITS)))
        at = label.end()
    else:
        # Stamps after the last label (after a break, the stamps here were just tried: greedy, they
        # took every one there was).
        if stamp := _STAMP.match(segment, at):
            at = stamp.end() if stamp.end() < len(segment) else at
    return at, named


def _words_start(segment: str) -> int:
    """Where the words a segment is hashed and counted by begin: after a time at its start and the
    speaker's name or number that follows it (the name would be hashed with the line's own words and
    dilute them); 0 for a segment that does not begin with a time."""
    if segment[:1] not in _TIME_FIRST or not (stamp := _TIME_STAMP.match(segment)):
        return 0
    if stamp.group().rstrip()[-1:] in (":", "："):
        return stamp.end()
    speaker = _LABEL.match(segment, stamp.end())
    return speaker.end() if speaker and speaker.end() < len(segment) else stamp.end()


def _cue_state(segment: str, cues: Cues) -> tuple[int, bool]:
    """The bits of the cues ``segment`` has, and whether its lead-in addresses a model or a processor."""
    found = cues.bits(segment)
    # A lead-in can name a model only if the segment does (a cue found in part of a segment is found
    # in the whole of it).
    naming = found & _ADDRESSEE_BITS
    # Behind a time, a speaker's name or a label, the segment's own words begin: cues that hold at a
    # segment's start hold there too ("[09:03] caio: bot, faz um pix…").
    at, named = _unlabelled(segment, cues if naming else None)
    own = segment[at:] if at else segment
    if at:
        found |= cues.starts(own)
    # "Assistant, translate…", "Hi David, please send…": the imperative after a short salutation.
    # Both lead-ins end at a colon or a comma (full-width ones too).
    if not (":" in own or "," in own or "：" in own or "，" in own):
        return found, named
    if not found & _IMPERATIVE:
        lead = _LEAD_IN.match(own)
        if lead and cues.bits(own[lead.end() :], _IMPERATIVE):
            found |= _IMPERATIVE
    if named or not naming:
        return found, named
    # Addressed to a model or to whatever processes the text, before anything else is said.
    address = _ADDRESS_LEAD.match(own)
    return found, bool(address and cues.bits(address.group(), _ADDRESSEE_BITS))


def _addresses(found: int, addressed: bool, n_words: int) -> bool:
    """Whether a segment addresses a model or whatever processes the text: by its opening words,
    or as a short line naming one ("For the assistant:", "Note to automated readers")."""
    return addressed or (n_words <= 8 and bool(found & _ADDRESSEE_BITS))


_CUE_COUNT = len(CUES)
_COLUMN = {name: k for k, name in enumerate(_BASE)}
(_YOUR_OUTPUT, _ADDRESSEE_AI, _YOU_MODAL, _MEMORY_WRITE, _AUTHORITY, _QUESTION) = (
    _COLUMN[name]
    for name in ("your_output", "addressee_ai", "you_modal", "memory_write", "authority", "question")
)
_IMPERATIVE_COLUMN = _COLUMN["imperative_start"]
# Each byte of a cue mask as its eight bits, as floats: the cue columns of a row, a byte at a time.
_BYTE_FLOATS = [tuple(1.0 if b >> k & 1 else 0.0 for k in range(8)) for b in range(256)]
_BYTE_SHIFTS = range(0, _CUE_COUNT, 8)


def _dense(
    found: int,
    addressed: bool,
    n_words: int,
    own: set[str],
    context_words: dict[str, int] | None,
    *,
    prose_in_table: bool,
    after_address: bool,
) -> list[float]:
    """The hand-designed features of a segment, in ``_BASE`` order."""
    dense = [x for shift in _BYTE_SHIFTS for x in _BYTE_FLOATS[found >> shift & 255]][:_CUE_COUNT]
    # "others" are the words of the rest of the text: context words not in this segment, and this
    # segment's words that occur elsewhere too. Counted without building the set: its size is
    # len(context) - (own words in context) + shared, and its overlap with own is shared.
    low_overlap = 0.0
    if context_words is not None:
        shared = sum(1 for w in own if context_words.get(w, 0) > 1)
        n_others = len(context_words) - len(own & context_words.keys()) + shared
        if n_others >= 5 and own:
            low_overlap = 1.0 - shared / len(own)
    in_document = 1.0 if context_words is not None and len(context_words) >= 12 else 0.0
    imperative = dense[_IMPERATIVE_COLUMN]
    addressee = dense[_ADDRESSEE_AI]
    dense += (
        1.0 if addressed else 0.0,  # addressed_lead
        1.0 if after_address else 0.0,  # after_address
        low_overlap,
        1.0 if n_words < 5 else 0.0,  # short
        1.0 if n_words > 40 else 0.0,  # long
        in_document,
        imperative * max(dense[_YOUR_OUTPUT], addressee),  # imperative_x_output
        addressee * max(imperative, dense[_YOU_MODAL], dense[_MEMORY_WRITE], dense[_AUTHORITY]),
        # detached_task: a task or question that shares nothing with the document around it.
        in_document * max(imperative, dense[_QUESTION]) * (1.0 if low_overlap >= 0.8 else 0.0),
        1.0 if prose_in_table else 0.0,
    )
    return dense


_STATIC_CACHE: dict[str, tuple[dict[int, float], int, bool, int, int]] = {}
_STATIC_CACHE_SIZE = 4096
_STATIC_LOCK = threading.Lock()


def _static_features(
    segment: str, cues: Cues, *, cache: bool
) -> tuple[dict[int, float], int, bool, int, int]:
    """What a segment's features owe to its own text: hashed tokens, the bits of its cues, whether
    its lead-in addresses a model, its word count, where its words begin (``_words_start``).

    Cached by segment (bounded): the cues narrowed for a text find what the whole cues find.
    """
    if cache and (hit := _STATIC_CACHE.get(segment)) is not None:
        return hit
    at = _words_start(segment)
    words = _WORD.findall(segment, at)
    # Counts in first-seen order (the order the weights are summed in), then L2-normalised.
    counts = Counter(_token_buckets(words, _CJK.findall(segment, at)))
    values = list(counts.values())
    # Integer counts: the sum of squares is exact in any order; both maps run in C.
    norm = math.sqrt(sum(map(operator.mul, values, values))) or 1.0
    hashed: dict[int, float] = dict(zip(counts, map(operator.truediv, values, repeat(norm)), strict=True))
    out = (hashed, *_cue_state(segment, cues), len(words), at)
    if cache:
        with _STATIC_LOCK:
            if len(_STATIC_CACHE) >= _STATIC_CACHE_SIZE:
                del _STATIC_CACHE[next(iter(_STATIC_CACHE))]
            _STATIC_CACHE[segment] = out
    return out


def segment_features(
    segment: str,
    context_words: dict[str, int] | None,
    own: set[str],
    cues: Cues | None = None,
    *,
    table: bool = False,
    after_address: bool = False,
) -> dict[int, float]:
    """Sparse features of one segment; ``context_words`` counts content words over the whole text.

    ``cues`` replaces ``CUES`` by the cues of a text this segment is part of (the same hits, faster);
    ``table`` says most of the text's segments are table rows; ``after_address`` that the segment
    before this one addresses a model or whatever processes the text ("Note for the AI:" on a line
    of its own).
    """
    hashed, found, addressed, n_words, _ = _static_features(
        segment, cues or _REFERENCE_CUES, cache=cues is not None
    )
    features = dict(hashed)
    prose = table and not segment.startswith("|") and n_words >= 3
    dense = _dense(
        found, addressed, n_words, own, context_words, prose_in_table=prose, after_address=after_address
    )
    active = [(k, value) for k, value in enumerate(dense) if value]
    for n, (k, value) in enumerate(active):
        features[HASH_DIM + k] = value
        for j, other in active[n + 1 :]:
            features[_PAIR_INDEX[k, j]] = value * other
    return features


def _text_cues(own_text: str, literals: dict[str, Literals] | None) -> _TextCues:
    index = literals.get(own_text) if literals is not None else None
    return _TextCues(index if index is not None else Literals(own_text))


def _is_table(parts: list[str]) -> bool:
    return len(parts) >= 3 and sum(p.startswith("|") for p in parts) >= 0.6 * len(parts)


def _context(owns: list[set[str]]) -> dict[str, int] | None:
    """How many segments each content word is in, segments with the same content words counted once
    (an instruction repeated word for word shares nothing more with the text around it than written
    once); ``None`` for a text of one segment so counted."""
    distinct = {frozenset(own) for own in owns} if len(owns) > 1 else ()
    counts: dict[str, int] = {}
    for own in distinct:
        for w in own:
            counts[w] = counts.get(w, 0) + 1
    return counts if len(distinct) > 1 else None


def text_segment_features(
    text: str,
    *,
    reference: bool = False,
    literals: dict[str, Literals] | None = None,
    keep: list[int] | None = None,
) -> list[dict[int, float]]:
    """Features of every segment of ``text``, in order (empty for a text with no words).

    Each cue runs only through the alternatives the whole text can match (every
    segment is part of it); ``reference=True`` runs every cue whole. ``literals``
    holds literal indexes of texts already scanned (reused for the same text).
    ``keep`` names the segments to read (by position), each in the context of those alone.
    """
    own_text = _own_text(text)
    parts = _segments_of(own_text)
    cues = None if reference else _text_cues(own_text, literals)
    owns, addressing = [], []
    for s in parts:
        static = _static_features(s, cues or _REFERENCE_CUES, cache=cues is not None)
        _, found, addressed, n_words, at = static
        owns.append(_content_words(s, at))
        addressing.append(_addresses(found, addressed, n_words))
    kept = range(len(parts)) if keep is None else keep
    context = _context([owns[n] for n in kept])
    table = _is_table([parts[n] for n in kept])
    out, after = [], False
    for n in kept:
        out.append(segment_features(parts[n], context, owns[n], cues, table=table, after_address=after))
        after = addressing[n]
    return out


def _sigmoid(logit: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, logit))))


# What the document stage reads of a text's segment logits (``document_features``), in weight order.
DOCUMENT_FEATURES = ("most_suspicious", "one_segment", "log_segments", "median")
# Segments are counted up to this many: the highest of many logits is high by chance more often, and
# the stage learns to discount it, but a text padded with more sentences must not lower its score
# without end (uncapped, BIPIA's long e-mails with an instruction were discounted below the
# threshold: bipia-dev 70.0% -> 61.7% blocked, docs/eval.md).
COUNTED_SEGMENTS = 10


def first_copies(parts: list[str]) -> list[int]:
    """The positions of ``parts`` that are not a copy of an earlier part: the document stage reads a
    segment written more than once once (written three times, an instruction would raise the median
    and the count, and hide itself)."""
    first: dict[str, int] = {}
    for n, part in enumerate(parts):
        first.setdefault(part, n)
    return sorted(first.values())


def document_features(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """The document stage's inputs for one text's segment logits (one or more, a segment written more
    than once counted once: ``first_copies``): the highest logit,
    whether it is the only one, log(1 + their number, counted up to ``COUNTED_SEGMENTS``) and their
    median."""
    n = len(logits)
    return np.asarray(
        [logits.max(), float(n == 1), math.log1p(min(n, COUNTED_SEGMENTS)), float(np.median(logits))]
    )


# A segment that shares this much of its content words with another (of the words either has, at
# least ``COPY_SHARED`` shared) is the same sentence again: written twice, behind a lead-in ("To
# repeat: …", "P.S. again: …") or reworded in a word or two.
NEAR_COPY = 0.6
COPY_SHARED = 3


def _repeated(owns: list[set[str]], where: int) -> bool:
    """Whether segment ``where`` (its content words ``owns[where]``) is said again in another."""
    return any(n != where and _same_sentence(owns[where], other) for n, other in enumerate(owns))


def _same_sentence(own: set[str], other: set[str]) -> bool:
    shared = len(own & other)
    return shared >= COPY_SHARED and shared >= NEAR_COPY * len(own | other)


def _said_once(owns: list[set[str]], where: int) -> list[int]:
    """The positions of the segments (by content words ``owns``) left when segment ``where`` is
    said once (the first of it and its copies, ``_repeated``) and every other segment with the
    same content words as an earlier one is left out. (Near copies of other segments are kept:
    finding them would compare every pair, and a long text would pay for it.)"""
    top = owns[where]
    kept: list[int] = []
    seen: set[frozenset[str]] = set()
    said = False
    for n, own in enumerate(owns):
        if n == where or _same_sentence(top, own):
            if said:
                continue
            said = True
        elif len(own) >= COPY_SHARED:
            key = frozenset(own)
            if key in seen:
                continue
            seen.add(key)
        kept.append(n)
    return kept


def _same_context(read: _Read, keep: list[int]) -> bool:
    """Whether every segment of ``keep`` has the same context among those segments alone as in
    the whole text (``Detector._in_context``): the same content words around it, the same table,
    and a segment before it that addresses a model exactly when it had one."""
    owns = read.owns
    if {frozenset(owns[n]) for n in keep} != {frozenset(own) for own in owns}:
        return False
    if _is_table([read.parts[n] for n in keep]) != _is_table(read.parts):
        return False
    addresses = [_addresses(*state, words) for state, words in zip(read.states, read.n_words, strict=True)]
    return _same_predecessors(addresses, keep)


def _same_predecessors(addresses: list[bool], keep: list[int]) -> bool:
    """Whether each kept segment follows a segment that addresses a model exactly when it did in
    the whole text."""
    before = False
    for n in keep:
        if before != (n > 0 and addresses[n - 1]):
            return False
        before = addresses[n]
    return True


def document_logit(logits: NDArray[np.float64], weights: NDArray[np.float64], bias: float) -> float:
    """The document stage's logit for a text's segment logits (each distinct segment once)."""
    return bias + float(document_features(logits) @ weights)


@dataclass(frozen=True, slots=True)
class InjectionScore:
    """The probability that ``text`` carries an instruction to an AI (the document stage's), which
    segment says so, and that segment's own probability (its logit alone, before the document
    stage: what ``WritePolicy.rules_detector_floor`` compares, on the scale it was chosen on)."""

    probability: float
    segment: int | None
    segment_probability: float


@dataclass(frozen=True)
class Detector:
    """Weights, bias and the two thresholds: reject at ``reject_at``, quarantine at ``quarantine_at``;
    the document stage's weights (one per ``DOCUMENT_FEATURES``) and bias."""

    weights: tuple[float, ...]
    bias: float
    quarantine_at: float
    reject_at: float
    version: str
    document_weights: tuple[float, ...]
    document_bias: float

    def score(
        self, text: str, *, reference: bool = False, literals: dict[str, Literals] | None = None
    ) -> InjectionScore:
        """The text's probability (0.0 for a text with no words): the document stage over its
        segments' logits; ``segment`` is the most suspicious one.

        Every segment is scored at once, in NumPy. ``reference=True`` sums each segment's sparse
        features (``text_segment_features``) with every cue run whole: the same score up to
        floating-point rounding, slower.
        """
        if reference:
            z = self._reference_logits(text)
            parts = segments(text)
            read = None
            owns = [_content_words(s, _words_start(s)) for s in parts]
        else:
            read = self._read(text, literals)
            z, parts, owns = self._in_context(read), read.parts, read.owns
        if not len(z):
            return InjectionScore(0.0, None, 0.0)
        where = int(np.argmax(z))
        distinct = z[first_copies(parts)]
        weights = np.asarray(self.document_weights)
        logit = document_logit(distinct, weights, self.document_bias)
        if len(parts) > 1 and _repeated(owns, where):
            # The most suspicious sentence said again: the text scores at least as it would with
            # that sentence said once (around its own copies an instruction reads as part of a
            # document, and said three times it would score lower than said once). The same
            # segments, read again with the context of those left (``_said_once``).
            once = _said_once(owns, where)
            if read is None:
                again = self._reference_logits(text, once)
            elif _same_context(read, once):
                # No segment's context changes (only copies with the same content words are left
                # out, as templated lines differing in their numbers): its logit stands.
                again = z[once]
            else:
                again = self._in_context(read, once)
            logit = max(logit, document_logit(again, weights, self.document_bias))
        return InjectionScore(_sigmoid(logit), where, _sigmoid(float(z[where])))

    def _reference_logits(self, text: str, keep: list[int] | None = None) -> NDArray[np.float64]:
        """The logits of ``text_segment_features(text, reference=True, keep=keep)``, summed one by one."""
        return np.asarray(
            [
                self.bias + sum(map(operator.mul, map(self.weights.__getitem__, f), f.values()))
                for f in text_segment_features(text, reference=True, keep=keep)
            ]
        )

    @cached_property
    def _arrays(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """The weights of the hashed features, of the hand-designed ones, and of their pairs (a matrix)."""
        w = np.asarray(self.weights, dtype=np.float64)
        # A pair's weight at (first, second) of an upper-triangular matrix: the pairs' sum for a row
        # of hand-designed features d is d·(P d).
        pairs = np.zeros((len(_BASE), len(_BASE)))
        pairs[_PAIR_LEFT, _PAIR_RIGHT] = w[HASH_DIM + len(_BASE) :]
        return w[:HASH_DIM], w[HASH_DIM : HASH_DIM + len(_BASE)], pairs

    def _logits(self, text: str, literals: dict[str, Literals] | None) -> NDArray[np.float64]:
        """Each segment's logit: the features of ``text_segment_features``, never built one by one."""
        return self._in_context(self._read(text, literals))

    def _read(self, text: str, literals: dict[str, Literals] | None) -> _Read:
        """What each segment's logit owes to its own text (``_Read``)."""
        own_text = _own_text(text)
        parts = _segments_of(own_text)
        if not parts:
            return _Read(parts, [], [], [], np.empty(0))
        cues = _text_cues(own_text, literals)
        # Unsigned 32-bit CRCs, straight into a buffer NumPy reads without a copy.
        buckets = array.array(_CRC_TYPECODE)
        sizes, states, n_words, owns = [], [], [], []
        ascii_text = own_text.isascii()
        words_of = (_WORD_ASCII if ascii_text else _WORD).findall
        for segment in parts:
            at = _words_start(segment)
            words = words_of(segment, at)
            runs = [] if ascii_text else _CJK.findall(segment, at)
            first = len(buckets)
            # Unmasked CRCs (masked below, all at once): most bigrams of a new text are new, and
            # hashing them is cheaper than a cache that misses.
            buckets.extend(_token_crcs(words, runs))
            buckets.extend(chain.from_iterable(map(_gram_buckets, words)))
            sizes.append(len(buckets) - first)
            states.append(_cue_state(segment, cues))
            n_words.append(len(words))
            owns.append(_own_words(words, runs))
        hashed_w = self._arrays[0]
        # Hashed features: each segment's bucket counts, L2-normalised, dotted with the weights.
        segment_of = np.repeat(np.arange(len(parts), dtype=np.int64), sizes)
        keys, counts = np.unique(
            segment_of * HASH_DIM + (np.frombuffer(buckets, dtype=np.uint32) & (HASH_DIM - 1)),
            return_counts=True,
        )
        owner, bucket = np.divmod(keys, HASH_DIM)
        c = counts.astype(np.float64)
        norm = np.sqrt(np.bincount(owner, weights=c * c, minlength=len(parts)))
        z = np.bincount(owner, weights=hashed_w[bucket] * c, minlength=len(parts)) / np.where(
            norm > 0, norm, 1.0
        )
        return _Read(parts, owns, states, n_words, self.bias + z)

    def _in_context(self, read: _Read, keep: list[int] | None = None) -> NDArray[np.float64]:
        """The logits of the segments ``keep`` (all by default) of a text read by ``_read``, in the
        context of those segments alone: the hand-designed features that weigh a segment against
        the rest of its text, added to what it owes to its own words."""
        kept = range(len(read.parts)) if keep is None else keep
        if not kept:
            return np.empty(0)
        context = _context([read.owns[n] for n in kept])
        table = _is_table([read.parts[n] for n in kept])
        rows = []
        after = False
        for n in kept:
            (found, addressed), words = read.states[n], read.n_words[n]
            prose = table and not read.parts[n].startswith("|") and words >= 3
            rows.append(
                _dense(
                    found, addressed, words, read.owns[n], context, prose_in_table=prose, after_address=after
                )
            )
            after = _addresses(found, addressed, words)
        _, dense_w, pair_w = self._arrays
        dense = np.asarray(rows, dtype=np.float64)
        logits: NDArray[np.float64] = (
            read.hashed[list(kept)] + dense @ dense_w + ((dense @ pair_w) * dense).sum(axis=1)
        )
        return logits


@dataclass(frozen=True, slots=True)
class _Read:
    """A text's segments as the segment model reads them before their context is weighed in: the
    segments, their content words, cue states and word counts, and the bias plus each one's hashed
    words."""

    parts: list[str]
    owns: list[set[str]]
    states: list[tuple[int, bool]]
    n_words: list[int]
    hashed: NDArray[np.float64]


def _crc_typecode() -> str:
    """An ``array`` type code of exactly 32 unsigned bits (what ``zlib.crc32`` gives)."""
    return next(code for code in ("I", "L") if array.array(code).itemsize == 4)


_CRC_TYPECODE = _crc_typecode()


def decode_weights(blob: str) -> tuple[float, ...]:
    """Little-endian float32 values from base64 text."""
    values = array.array("f")
    values.frombytes(base64.b64decode(blob))
    return tuple(values.tolist())


@cache
def load_detector(path: Path = WEIGHTS_FILE) -> Detector:
    """The shipped detector (cached); ``path`` names another weights file."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    weights = decode_weights(doc["weights"])
    document = doc.get("document", {})
    if (
        len(weights) != FEATURE_DIM
        or doc.get("features") != list(_DENSE)
        or document.get("features") != list(DOCUMENT_FEATURES)
    ):
        raise GraphmemError(
            f"{path} was trained for other features; run python -m graphmem.eval.train_detector",
            code="detector_weights_mismatch",
        )
    return Detector(
        weights,
        float(doc["bias"]),
        float(doc["quarantine_at"]),
        float(doc["reject_at"]),
        doc["version"],
        tuple(float(x) for x in document["weights"]),
        float(document["bias"]),
    )


def dense_feature_names() -> tuple[str, ...]:
    """The hand-designed features, in weight order after the hashed ones."""
    return _DENSE
