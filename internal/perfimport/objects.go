package perfimport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"er/internal/archive"
	"er/internal/experiment"
	"er/internal/objfile"
)

// found is what object found for a load object: the file on this machine that holds it, or why none.
type found struct{ file, why string }

// object returns the file on this machine that is the load object at path with the given build id:
// path itself when its build id is that one (or either is unknown), else perf's copy in its build-id
// cache (perf record copies the objects that samples hit into ~/.debug), else "" and why not.
func (c *converter) object(path, buildID string) (file, why string) {
	if path == "[vdso]" {
		if c.sameMachine() {
			return path, ""
		}
		return "", "recorded under another kernel"
	}
	if !strings.HasPrefix(path, "/") {
		return "", "not a file"
	}
	key := path + "\x00" + buildID
	if c.objects == nil {
		c.objects = map[string]found{}
	}
	if f, ok := c.objects[key]; ok {
		return f.file, f.why
	}
	f := lookObject(path, buildID)
	c.objects[key] = f
	return f.file, f.why
}

func lookObject(path, buildID string) found {
	o, err := objfile.Open(path)
	var why string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = "it is not on this machine"
	case err != nil:
		why = err.Error()
	default:
		id := o.BuildID()
		o.Close()
		if buildID == "" || id == "" || id == buildID {
			return found{file: path}
		}
		why = fmt.Sprintf("the file on this machine has build id %s, the profiled one %s", id, buildID)
	}
	if buildID != "" && len(buildID) > 2 {
		if cached := filepath.Join(buildIDDir(), ".build-id", buildID[:2], buildID[2:], "elf"); fileExists(cached) {
			return found{file: cached}
		}
		why += " (and perf's build-id cache has no copy)"
	}
	return found{why: why}
}

// buildIDDir is perf's build-id cache: $PERF_BUILDID_DIR, or ~/.debug.
func buildIDDir() string {
	if d := os.Getenv("PERF_BUILDID_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".debug")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// writeArchives writes the symbol archives of the load objects mapped into the experiments, and of
// the kernel's functions the stacks hold, and returns warnings for those it could not write.
func (c *converter) writeArchives() []string {
	var warns []string
	paths := make([]string, 0, len(c.used))
	for p := range c.used {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	ids := map[string]string{}
	for _, p := range c.images {
		for _, m := range p.live {
			if m.BuildID != "" {
				ids[m.Path] = m.BuildID
			}
		}
	}
	for _, path := range paths {
		if !strings.HasPrefix(path, "/") && path != "[vdso]" {
			continue
		}
		id := ids[path]
		if id == "" {
			id = c.f.BuildIDOf(path)
		}
		file, why := c.object(path, id)
		var err error
		switch {
		case file == "":
			err = fmt.Errorf("%s", why)
		case path == "[vdso]":
			var a *experiment.Archive
			if a, err = archive.VDSO(); err == nil {
				err = experiment.WriteArchive(c.dir, a)
			}
		case file == path:
			err = archive.Write(c.dir, path)
		default:
			var a *experiment.Archive
			if a, err = archive.Build(file); err == nil {
				a.Path = path
				err = experiment.WriteArchive(c.dir, a)
			}
		}
		if err != nil {
			warns = append(warns, fmt.Sprintf("%s is not archived: %v; its functions are not named", path, err))
		}
	}
	if len(c.kernelPCs) == 0 {
		return warns
	}
	if !c.sameMachine() {
		return append(warns, fmt.Sprintf("kernel functions are not named: the profile was recorded on %s (Linux %s), not this machine's kernel",
			c.f.Hostname, c.f.OSRelease))
	}
	addrs := make([]uint64, 0, 2*len(c.kernelPCs))
	for pc := range c.kernelPCs {
		addrs = append(addrs, pc, pc-1) // a return address can be just past its call
	}
	a, err := archive.KernelAt(addrs)
	if a != nil {
		a.Symbols = archive.UsedSymbols(a, addrs)
		if werr := experiment.WriteArchive(c.dir, a); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		warns = append(warns, "kernel symbols: "+err.Error())
	}
	return warns
}
