// A trivial read: proves the server answers and the database exists.
RETURN 1 AS ok
