package version

import (
	"regexp"
	"testing"
)

func TestVersion(t *testing.T) {
	if !regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(Version) {
		t.Errorf("Version %q is not MAJOR.MINOR.PATCH", Version)
	}
	if want := "er " + Version + " (a performance analyzer for Linux)"; String() != want {
		t.Errorf("String() = %q, want %q", String(), want)
	}
}
