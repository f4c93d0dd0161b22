#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: one wrapper for its integer options.
static inline int typedstore_db_config_int(sqlite3 *db, int op, int value) {
  int result = 0;
  return sqlite3_db_config(db, op, value, &result);
}

#include <sys/prctl.h>
#include <sys/timerfd.h>

// prctl is variadic too: the calling thread's timer slack, in nanoseconds (the remote-change
// monitor's short sleeps end on time with 1).
static inline int typedstore_set_timer_slack(unsigned long nanoseconds) {
  return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0);
}
