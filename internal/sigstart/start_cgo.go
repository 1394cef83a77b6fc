//go:build cgo

package sigstart

/*
#include <signal.h>
#include <stdint.h>

// er_sigstart_ignored is the signals ignored when the process started, bit s-1 for signal s: read by
// a constructor, which the dynamic loader runs before the Go runtime starts and installs its
// handlers.
static uint64_t er_sigstart_ignored;

__attribute__((constructor)) static void er_sigstart_record(void)
{
	for (int s = 1; s < 65; s++) {
		struct sigaction a;
		if (sigaction(s, NULL, &a) == 0 && !(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN)
			er_sigstart_ignored |= 1ull << (s - 1);
	}
}

static uint64_t er_sigstart_get(void) { return er_sigstart_ignored; }
*/
import "C"

import "syscall"

var atStart = uint64(C.er_sigstart_get())

func ignoredAtStart(s syscall.Signal) bool { return atStart&(1<<(uint(s)-1)) != 0 }

// Exact says that Ignored reports every signal ignored at start.
const Exact = true
