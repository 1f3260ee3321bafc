#ifndef CSECCOMP_SHIM_H
#define CSECCOMP_SHIM_H

#include <seccomp.h>

#endif
