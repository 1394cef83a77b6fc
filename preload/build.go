package preload

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// CFlags are the flags the collector library is compiled with; the Makefile uses the same
// (TestMakefileFlags checks).
// (-e: run as a program, it is the probe of the seccomp filters er collect runs under: seccomp.c.)
var CFlags = []string{"-O2", "-g", "-Wall", "-Wextra", "-fPIC", "-std=gnu11", "-fvisibility=hidden", "-shared", "-Wl,-e,er_probe_main"}

// Libs are the libraries it links with.
var Libs = []string{"-ldl", "-lpthread"}

// Dir is the directory of the library's C sources, found from this file.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "c")
}

// JavaFlags are the flags that build the JVMTI agent (java.c) against the JDK's headers: those of
// /usr/lib/jvm/default-java, else of the first JDK in /usr/lib/jvm; none where no JDK is installed
// (the agent then refuses to start). The Makefile finds them the same way.
func JavaFlags() []string {
	hs, _ := filepath.Glob("/usr/lib/jvm/*/include/jvmti.h")
	hs = append([]string{"/usr/lib/jvm/default-java/include/jvmti.h"}, hs...)
	for _, h := range hs {
		if _, err := os.Stat(h); err == nil {
			inc := filepath.Dir(h)
			return []string{"-DER_JVMTI", "-I" + inc + "/", "-I" + inc + "/linux"}
		}
	}
	return nil
}

// Build compiles the collector library into out with gcc.
func Build(out string) error {
	srcs, err := filepath.Glob(filepath.Join(Dir(), "*.c"))
	if err != nil || len(srcs) == 0 {
		return fmt.Errorf("no C sources in %s", Dir())
	}
	args := append(append(append(append(append([]string{}, CFlags...), JavaFlags()...), "-o", out), srcs...), Libs...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}
