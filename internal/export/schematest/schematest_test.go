package schematest

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSpeedscope: the smallest file the schema allows is valid, one without its profiles is not.
func TestSpeedscope(t *testing.T) {
	if _, err := os.Stat(SpeedscopeSchema()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(ok, []byte(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]},"profiles":[]}`), 0o644)
	os.WriteFile(bad, []byte(`{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":[]}}`), 0o644)
	if err := Speedscope(t, ok); err != nil {
		t.Errorf("a valid file: %v", err)
	}
	if err := Speedscope(t, bad); err == nil {
		t.Error("a file without profiles is valid")
	}
}
