#ifndef BATON_C_SQLITE_CONFIG_H
#define BATON_C_SQLITE_CONFIG_H

struct sqlite3;

/// `sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enable, enabled)`: Swift cannot call
/// the variadic function itself. Turns the connection's triggers on (`enable` 1) or off (0), or
/// leaves them (-1); `*enabled` receives the setting in force after the call. Returns SQLite's
/// result code.
int baton_sqlite3_enable_triggers(struct sqlite3 *db, int enable, int *enabled);

#endif
