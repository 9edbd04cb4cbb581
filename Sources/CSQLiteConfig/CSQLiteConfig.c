#include "CSQLiteConfig.h"

#include <sqlite3.h>

int baton_sqlite3_enable_triggers(struct sqlite3 *db, int enable, int *enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, enable, enabled);
}
