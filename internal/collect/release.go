package collect

import (
	"io"
	"os"
	"syscall"

	"er/internal/perfevent"
)

// releaseEnv marks the helper process that releases perf events for er (see releaseInHelper).
const releaseEnv = "ER_RELEASE_EVENTS"

func init() {
	if os.Getenv(releaseEnv) == "1" {
		// The helper: hold the inherited events until er closes the pipe, then exit, which releases
		// them.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	perfevent.ReleaseSiblings = releaseInHelper
}

// releaseInHelper hands the files of perf events fds to a helper process, the shell (or, where there
// is none, this program run again with releaseEnv set), and closes them here. Releasing a trace
// event's last file unregisters the kernel's probe and waits for an RCU grace period, 13 ms for each
// CPU's runtime counter on this machine (two thirds of `er collect /bin/true` as root, and more with
// more CPUs); the helper, which holds the last references, pays it when it exits, after er has closed
// its copies and the pipe, and no one waits for it (init reaps it once er has exited). It returns
// false, closing nothing, where no helper can be started.
func releaseInHelper(fds []int) bool {
	stop, _, ok := handOff(fds)
	if ok {
		stop()
	}
	return ok
}

// holderShell is the helper's first choice: a shell that waits for the end of its input and exits. It
// starts in a third of a millisecond of CPU, where this program (a Go runtime and every package's
// initialization) takes 3 ms.
var holderShell = []string{"/bin/sh", "-c", "read x"}

// handOff starts the helper, process pid, holding the files fds and closes them here; stop lets it
// exit. Where no helper can be started, it returns false and the files stay open here.
func handOff(fds []int) (stop func(), pid int, ok bool) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, 0, false
	}
	// stdin: the pipe; stdout and stderr: /dev/null. Not er's: whoever reads er's output through a pipe
	// (a shell's $(...), a test, a CI log) waits for its end, which the helper would hold until it has
	// paid for the release: 15 to 26 ms after er's exit on 2 CPUs.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		r.Close()
		w.Close()
		return nil, 0, false
	}
	defer null.Close()
	files := []uintptr{r.Fd(), null.Fd(), null.Fd()}
	for _, fd := range fds {
		files = append(files, uintptr(fd))
	}
	pid, err = syscall.ForkExec(holderShell[0], holderShell, &syscall.ProcAttr{Files: files, Env: []string{}})
	if err != nil {
		var exe string
		if exe, err = os.Executable(); err == nil {
			pid, err = syscall.ForkExec(exe, []string{exe}, &syscall.ProcAttr{Files: files, Env: []string{releaseEnv + "=1"}})
		}
	}
	r.Close()
	if err != nil {
		w.Close()
		return nil, 0, false
	}
	// The helper is not waited for: once er exits, init reaps it.
	for _, fd := range fds {
		syscall.Close(fd)
	}
	return func() { w.Close() }, pid, true
}
