#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: one wrapper for its integer options.
static inline int typedstore_db_config_int(sqlite3 *db, int op, int value) {
  int result = 0;
  return sqlite3_db_config(db, op, value, &result);
}
