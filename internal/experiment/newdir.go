package experiment

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NewDir picks the directory of a new experiment: output (er collect's -o) in dir (-d, "" for the
// current directory), or the next free NAME.N.er there, NAME being the group's (-g) base name or
// test. It says why the experiment cannot be made there: the directory does not exist (nothing
// is created: a mistyped -d or -o would otherwise scatter directories), is not one, is not
// writable, or output exists.
func NewDir(dir, output, group string) (string, error) {
	if dir == "" {
		dir = "."
	}
	if output != "" {
		p := output
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkStoreDir(filepath.Dir(p)); err != nil {
			return "", err
		}
		if _, err := os.Lstat(p); err == nil {
			return "", fmt.Errorf("experiment %s already exists: remove it (er rm %s) or choose another -o name", p, p)
		}
		return p, nil
	}
	if err := checkStoreDir(dir); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("experiment directory %s: %v", dir, err)
	}
	stem := "test"
	if group != "" {
		stem = strings.TrimSuffix(filepath.Base(group), ".erg")
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(stem) + `\.([0-9]+)\.er$`)
	next := 1
	for _, e := range ents {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= next {
				next = n + 1
			}
		}
	}
	return filepath.Join(dir, fmt.Sprintf("%s.%d.er", stem, next)), nil
}

// checkStoreDir says why the experiment cannot be made in dir: it does not exist (er does not create
// it: a mistyped -d or -o would otherwise scatter directories), is not a directory, or is not writable.
func checkStoreDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("experiment directory %s does not exist: create it first (mkdir -p %s) or choose another -d or -o", dir, dir)
	case err != nil:
		return fmt.Errorf("experiment directory %s: %v", dir, err)
	case !st.IsDir():
		return fmt.Errorf("experiment directory %s is not a directory: choose another -d or -o", dir)
	case unix.Access(dir, unix.W_OK|unix.X_OK) != nil:
		return fmt.Errorf("experiment directory %s is not writable by you: choose another -d or -o", dir)
	}
	return nil
}
