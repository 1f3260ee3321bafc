#define _GNU_SOURCE
#include "CShims.h"

#include <pthread.h>

int CShims_name_this_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }
