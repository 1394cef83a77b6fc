// Package schematest validates files against the published schemas of the formats er exports, for tests.
package schematest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Speedscope validates a speedscope file against speedscope's published schema (see
// internal/export/testdata/README.md) with python3's jsonschema, returning its complaint; it skips
// the test without them.
func Speedscope(t testing.TB, file string) error {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the speedscope schema cannot be checked")
	}
	if out, err := exec.Command("python3", "-c", "import jsonschema").CombinedOutput(); err != nil {
		t.Skipf("python3 has no jsonschema (Debian python3-jsonschema): %s", out)
	}
	out, err := exec.Command("python3", "-c", `import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[2])), json.load(open(sys.argv[1])))`, SpeedscopeSchema(), file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// SpeedscopeSchema is the path of the schema, in internal/export/testdata.
func SpeedscopeSchema() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "testdata", "speedscope-file-format-schema.json")
}
