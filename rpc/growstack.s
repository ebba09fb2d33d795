#include "textflag.h"
#include "funcdata.h"

// func growStack()
//
// A frame of 16 KiB, which the function's prologue makes the runtime
// grow the stack for, and nothing else: no stores to it, so no zeroing.
TEXT ·growStack(SB), 0, $16384-0
	NO_LOCAL_POINTERS
	RET
