/* sessions.h — internal knobs of the process manager. */
#ifndef CORRAL_SESSIONS_H
#define CORRAL_SESSIONS_H

#include <stdint.h>

#include "corral.h"

/* How long a finished session is kept for a last poll (default 30 s). */
void sessions_set_retention(corral_sessions *m, int64_t ms);

#endif
