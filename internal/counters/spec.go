package counters

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Env is what names resolve against: the machine's PMUs and tracefs.
type Env struct {
	PMUs      []PMU
	TraceDirs []string
}

// System returns the Env of this machine.
func System() (*Env, error) {
	pmus, err := ReadPMUs(DevicesDir)
	return &Env{PMUs: pmus, TraceDirs: TraceDirs}, err
}

// pmu returns the PMU named name.
func (e *Env) pmu(name string) *PMU {
	for i := range e.PMUs {
		if e.PMUs[i].Name == name {
			return &e.PMUs[i]
		}
	}
	return nil
}

// CorePMUs returns the PMUs of the CPUs' own events.
func (e *Env) CorePMUs() []*PMU {
	var out []*PMU
	for i := range e.PMUs {
		if e.PMUs[i].Core() {
			out = append(out, &e.PMUs[i])
		}
	}
	return out
}

// MaxCounters is the most counters one experiment records.
const MaxCounters = 8

// Auto is what -h auto asks for: cycles and instructions.
var Auto = []string{"cycles", "insts"}

// ErrUnknown marks a counter name that names nothing on this machine.
var ErrUnknown = errors.New("unknown counter")

// Parse reads -h's argument: "name[,interval][,name[,interval]]..." where a name may start with '+'
// (record data addresses) and end in "/N" (a register, which Linux chooses itself: ignored), and an
// interval is on, hi (a tenth of on's), lo (ten times on's) or a positive number of events; or "auto"
// (cycles and instructions). "off" gives none.
func (e *Env) Parse(arg string) ([]Counter, error) {
	switch arg {
	case "", "off":
		return nil, nil
	case "auto":
		arg = strings.Join(Auto, ",")
	}
	toks, err := splitSpec(arg)
	if err != nil {
		return nil, err
	}
	var out []Counter
	seen := map[string]bool{}
	for i := 0; i < len(toks); i++ {
		name := toks[i]
		if name == "" {
			return nil, fmt.Errorf("-h %s: an empty counter name", arg)
		}
		if _, ok := parseInterval(name, 1); ok {
			return nil, fmt.Errorf("-h %s: interval %q follows no counter (name[,interval][,name[,interval]]...)", arg, name)
		}
		c, err := e.Lookup(name)
		if err != nil {
			return nil, err
		}
		if i+1 < len(toks) {
			if iv, ok := parseInterval(toks[i+1], c.Default); ok {
				if iv == 0 {
					return nil, fmt.Errorf("-h %s: interval %q of %s: a positive number of events, on, hi or lo", arg, toks[i+1], c.Name)
				}
				c.Interval = iv
				i++
			}
		}
		if seen[c.MetricName()] {
			return nil, fmt.Errorf("-h %s: %s is given twice", arg, c.Name)
		}
		seen[c.MetricName()] = true
		out = append(out, c)
	}
	if len(out) > MaxCounters {
		return nil, fmt.Errorf("-h %s: %d counters; at most %d in one experiment", arg, len(out), MaxCounters)
	}
	return out, nil
}

// looksNumeric says whether s starts like a number (an interval that failed to parse).
func looksNumeric(s string) bool { return s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '-') }

// parseInterval reads an interval: on, hi, lo, or a number of events (decimal, or 0x hex); 0 for a
// number that is not positive.
func parseInterval(s string, def uint64) (uint64, bool) {
	switch s {
	case "on":
		return def, true
	case "hi", "high":
		return max(def/10, 1), true
	case "lo", "low":
		return def * 10, true
	}
	if !looksNumeric(s) {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, true // (a bad number: the caller says so)
	}
	if v <= 0 {
		return 0, true
	}
	return uint64(v), true
}

// splitSpec splits -h's argument at commas, keeping a pmu/terms/ name's commas.
func splitSpec(arg string) ([]string, error) {
	var toks []string
	parts := strings.Split(arg, ",")
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		name := strings.TrimPrefix(p, "+")
		if k := strings.Index(name, "/"); k > 0 && !registerSuffix.MatchString(name) && !strings.HasSuffix(name[k+1:], "/") {
			// pmu/term,term,.../: join up to the part that closes it.
			j := i + 1
			for j < len(parts) && !strings.Contains(parts[j], "/") {
				j++
			}
			if j == len(parts) {
				return nil, fmt.Errorf("-h %s: %q has no closing '/' (pmu/term=value,.../)", arg, p)
			}
			p = strings.Join(parts[i:j+1], ",")
			i = j
		}
		toks = append(toks, p)
	}
	return toks, nil
}

// registerSuffix matches the manual's register choice on a name: cycles/0.
var registerSuffix = regexp.MustCompile(`^[^/]+/[0-9]+$`)

// rawHex matches a raw event r<hex> (perf's syntax).
var rawHex = regexp.MustCompile(`^r[0-9a-fA-F]{1,16}$`)

// Lookup returns the counter a name gives, at its default interval: '+' asks for data addresses; an
// alias or perf name, a software event, a tracepoint (system:event), r<hex> for the core PMU's raw
// encoding, pmu/terms/ or pmu/event-name/, or an event name of a core PMU.
func (e *Env) Lookup(name string) (Counter, error) {
	given := name
	back := strings.HasPrefix(name, "+")
	name = strings.TrimPrefix(name, "+")
	if registerSuffix.MatchString(name) {
		name = name[:strings.Index(name, "/")]
	}
	c, err := e.lookup(name)
	if err != nil {
		return Counter{}, err
	}
	if back {
		if c.Class != Software && c.Class != Tracepoint {
			c.Precise = 2
		}
		if c.MemOp == "" {
			return Counter{}, fmt.Errorf("-h %s: %s gives no data addresses: '+' takes a counter of loads or stores "+
				"(its type says load, store or load-store in `er collect -h`), or a page-fault event", given, c.Name)
		}
		c.Backtrack = true
	}
	return c, nil
}

func (e *Env) lookup(name string) (Counter, error) {
	if c, ok := lookupAlias(name); ok {
		return c, nil
	}
	if strings.Contains(name, ":") && !strings.Contains(name, "/") {
		id, err := tracepointID(e.TraceDirs, name)
		if err != nil {
			return Counter{}, err
		}
		return Counter{Name: name, Title: "Tracepoint " + name, Class: Tracepoint, Type: unix.PERF_TYPE_TRACEPOINT,
			Config: id, Interval: 1, Default: 1, Unit: Events, Raw: name}, nil
	}
	if rawHex.MatchString(name) {
		v, _ := strconv.ParseUint(name[1:], 16, 64)
		typ := uint32(unix.PERF_TYPE_RAW)
		return Counter{Name: name, Title: "Raw event " + name, Class: Raw, Type: typ, Config: v,
			Interval: DefaultRaw, Default: DefaultRaw, Unit: Events, Raw: name}, nil
	}
	if pmuName, rest, ok := strings.Cut(name, "/"); ok && strings.HasSuffix(rest, "/") {
		p := e.pmu(pmuName)
		if p == nil {
			return Counter{}, fmt.Errorf("%w %s: this machine has no PMU %q (%s)", ErrUnknown, name, pmuName, e.pmuList())
		}
		terms := strings.TrimSuffix(rest, "/")
		w, err := p.Encode(terms)
		if err != nil {
			return Counter{}, fmt.Errorf("-h %s: %w", name, err)
		}
		return e.rawCounter(name, p, terms, w), nil
	}
	for _, p := range e.CorePMUs() {
		if _, ok := p.Events[name]; ok {
			w, err := p.Encode(name)
			if err != nil {
				return Counter{}, fmt.Errorf("-h %s: %w", name, err)
			}
			return e.rawCounter(name, p, name, w), nil
		}
	}
	return Counter{}, fmt.Errorf("%w %q: not an alias, software event, tracepoint (system:event), r<hex> or pmu/terms/; `er collect -h` lists this machine's counters", ErrUnknown, name)
}

// rawCounter is the counter of PMU p's event encoded as w, named name.
func (e *Env) rawCounter(name string, p *PMU, terms string, w [3]uint64) Counter {
	c := Counter{Name: name, Title: p.Name + " " + terms, Class: Raw, Type: p.Type, Config: w[0], Config1: w[1], Config2: w[2],
		Interval: DefaultRaw, Default: DefaultRaw, Unit: Events, Raw: p.Name + "/" + terms + "/"}
	if ev, ok := p.Events[terms]; ok {
		c.Raw = p.Name + "/" + ev + "/"
		switch terms {
		case "cpu-cycles", "cycles":
			c.Unit = CPUCycles
		case "mem-loads", "mem-loads-aux":
			c.MemOp = Load
		case "mem-stores":
			c.MemOp = Store
		}
	}
	if strings.HasPrefix(p.Name, "ibs_op") {
		c.MemOp = LoadStore // AMD's instruction-based sampling gives each sampled op's data address
	}
	return c
}

// pmuList names the PMUs for a message.
func (e *Env) pmuList() string {
	if len(e.PMUs) == 0 {
		return "it lists none in " + DevicesDir
	}
	var names []string
	for _, p := range e.PMUs {
		names = append(names, p.Name)
	}
	return "it has " + strings.Join(names, ", ")
}
