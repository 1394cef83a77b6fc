package counters

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The PMUs the kernel exposes in sysfs (/sys/bus/event_source/devices): each with its perf type,
// the fields of its raw event encoding (format/: "event" is config bits 0-7, and so on) and the
// events it names (events/: "cpu-cycles" is "event=0x3c").

// DevicesDir is where the kernel lists its PMUs.
const DevicesDir = "/sys/bus/event_source/devices"

// PMU is one performance monitoring unit from sysfs.
type PMU struct {
	Name    string
	Type    uint32
	Formats map[string]Format // by field name
	Events  map[string]string // event name to its terms: "event=0x3c"
}

// Format is where one field of a PMU's raw encoding goes: bits of config, config1 or config2.
type Format struct {
	Word uint8      // 0 config, 1 config1, 2 config2
	Bits []bitRange // least significant first, as listed
}

type bitRange struct{ lo, hi uint8 }

// width is the field's number of bits.
func (f Format) width() int {
	n := 0
	for _, r := range f.Bits {
		n += int(r.hi-r.lo) + 1
	}
	return n
}

// put writes value v into the field's bits of words.
func (f Format) put(words *[3]uint64, v uint64) {
	for _, r := range f.Bits {
		n := uint(r.hi-r.lo) + 1 // 1 to 64 (a shift by 64 gives 0 in Go)
		words[f.Word] |= (v & (1<<n - 1)) << r.lo
		v >>= n
	}
}

// parseFormat reads a format file's text: "config:0-7", "config:0-7,32-35", "config1:0-63", "config:21".
func parseFormat(text string) (Format, error) {
	word, bits, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return Format{}, fmt.Errorf("%q is not config[12]:bits", text)
	}
	var f Format
	switch word {
	case "config":
	case "config1":
		f.Word = 1
	case "config2":
		f.Word = 2
	default:
		return Format{}, fmt.Errorf("%q: unknown word %q (config, config1 or config2)", text, word)
	}
	for _, part := range strings.Split(bits, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		l, err1 := strconv.ParseUint(lo, 10, 8)
		h := l
		var err2 error
		if isRange {
			h, err2 = strconv.ParseUint(hi, 10, 8)
		}
		if err1 != nil || err2 != nil || l > 63 || h > 63 || h < l {
			return Format{}, fmt.Errorf("%q: bad bit range %q", text, part)
		}
		f.Bits = append(f.Bits, bitRange{uint8(l), uint8(h)})
	}
	return f, nil
}

// ReadPMUs reads the PMUs under dir (DevicesDir, or a copy of it): those with a type; their formats
// and events where they have them. A PMU whose files cannot be parsed is left out, and said in the
// error returned beside the others.
func ReadPMUs(dir string) ([]PMU, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var pmus []PMU
	var errs []error
	for _, e := range ents {
		p, err := readPMU(filepath.Join(dir, e.Name()), e.Name())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if p != nil {
			pmus = append(pmus, *p)
		}
	}
	slices.SortFunc(pmus, func(a, b PMU) int { return strings.Compare(a.Name, b.Name) })
	return pmus, errors.Join(errs...)
}

// readPMU reads one PMU's directory; nil without a type file.
func readPMU(dir, name string) (*PMU, error) {
	b, err := os.ReadFile(filepath.Join(dir, "type"))
	if err != nil {
		return nil, nil
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s: bad type %q", filepath.Join(dir, "type"), strings.TrimSpace(string(b)))
	}
	p := &PMU{Name: name, Type: uint32(typ), Formats: map[string]Format{}, Events: map[string]string{}}
	fmts, _ := os.ReadDir(filepath.Join(dir, "format"))
	for _, f := range fmts {
		path := filepath.Join(dir, "format", f.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		ft, err := parseFormat(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		p.Formats[f.Name()] = ft
	}
	evs, _ := os.ReadDir(filepath.Join(dir, "events"))
	for _, e := range evs {
		if strings.Contains(e.Name(), ".") { // .scale, .unit, .snapshot, .per-pkg
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "events", e.Name()))
		if err != nil {
			continue
		}
		p.Events[e.Name()] = strings.TrimSpace(string(b))
	}
	return p, nil
}

// Core says whether the PMU counts the CPUs' own events (cpu on Intel and AMD; cpu_core and cpu_atom
// on hybrid Intel; armv8_pmuv3_* on Arm).
func (p *PMU) Core() bool {
	return p.Name == "cpu" || p.Name == "cpu_core" || p.Name == "cpu_atom" || strings.HasPrefix(p.Name, "armv8_pmuv3") ||
		strings.HasPrefix(p.Name, "armv9_")
}

// Encode turns terms ("event=0x3c,umask=0x1,inv", or an event name of the PMU's events/, or
// "config=0x...") into the config words. A term without a value sets its field to 1.
func (p *PMU) Encode(terms string) ([3]uint64, error) {
	var w [3]uint64
	if t, ok := p.Events[terms]; ok {
		terms = t
	}
	for _, term := range strings.Split(terms, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		name, val, hasVal := strings.Cut(term, "=")
		v := uint64(1)
		if hasVal {
			var err error
			if v, err = strconv.ParseUint(val, 0, 64); err != nil {
				return w, fmt.Errorf("%s/%s/: %q is not a number", p.Name, terms, val)
			}
		}
		switch name {
		case "config":
			w[0] |= v
			continue
		case "config1":
			w[1] |= v
			continue
		case "config2":
			w[2] |= v
			continue
		}
		f, ok := p.Formats[name]
		if !ok {
			if t, ok := p.Events[name]; ok && !hasVal {
				sub, err := p.Encode(t)
				if err != nil {
					return w, err
				}
				w[0], w[1], w[2] = w[0]|sub[0], w[1]|sub[1], w[2]|sub[2]
				continue
			}
			return w, fmt.Errorf("%s has no field %q (its fields: %s)", p.Name, name, strings.Join(p.fieldNames(), ", "))
		}
		if n := f.width(); n < 64 && v>>uint(n) != 0 {
			return w, fmt.Errorf("%s: %s=%#x does not fit in its %d bits", p.Name, name, v, n)
		}
		f.put(&w, v)
	}
	return w, nil
}

// fieldNames lists the PMU's format fields, sorted.
func (p *PMU) fieldNames() []string {
	var out []string
	for n := range p.Formats {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// EventNames lists the PMU's named events, sorted.
func (p *PMU) EventNames() []string {
	var out []string
	for n := range p.Events {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TraceDirs are where tracefs may be mounted.
var TraceDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// tracepointID returns the perf config of tracepoint "system:event" under one of dirs.
func tracepointID(dirs []string, name string) (uint64, error) {
	sys, ev, ok := strings.Cut(name, ":")
	if !ok || sys == "" || ev == "" || strings.ContainsAny(name, "/ ") || strings.Contains(ev, ":") {
		return 0, fmt.Errorf("%q is not a tracepoint: system:event, as sched:sched_switch", name)
	}
	var errs []string
	for _, d := range dirs {
		path := filepath.Join(d, "events", sys, ev, "id")
		b, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				errs = append(errs, path+": permission denied (tracepoints need root, or tracefs readable)")
			}
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: bad id %q", path, strings.TrimSpace(string(b)))
		}
		return id, nil
	}
	if len(errs) > 0 {
		return 0, errors.New(strings.Join(errs, "; "))
	}
	return 0, fmt.Errorf("no tracepoint %s in %s (is tracefs mounted? `ls %s/events/%s` lists the system's)",
		name, strings.Join(dirs, " or "), dirs[0], sys)
}
