package erprint

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"er/internal/analysis"
)

// object_show, object_hide, object_api and objects_default: how each load object's functions show in
// the views. A hidden object is one function named as the object (<libc.so.6>); an API object shows
// only the functions entered from outside it, its callees inside it folded into them.

// objectVisibility is the session's settings: by object (a path, a base name, or <base name>), and
// for all objects.
type objectVisibility struct {
	by  map[string]analysis.Visibility
	all analysis.Visibility
}

// key is the settings as text, for the profile's cache key (empty: the default).
func (v objectVisibility) key() string {
	if len(v.by) == 0 && v.all == analysis.ShowAll {
		return ""
	}
	var parts []string
	for k, x := range v.by {
		parts = append(parts, fmt.Sprintf("%s=%d", k, x))
	}
	sort.Strings(parts)
	return fmt.Sprintf("all=%d;%s", v.all, strings.Join(parts, ";"))
}

// of returns the visibility of the object at path.
func (v objectVisibility) of(path string) analysis.Visibility {
	base := filepath.Base(path)
	for _, k := range []string{path, base, "<" + base + ">"} {
		if x, ok := v.by[k]; ok {
			return x
		}
	}
	return v.all
}

// visibilityFunc returns the analysis option, nil for the default.
func (v objectVisibility) visibilityFunc() func(string) analysis.Visibility {
	if v.key() == "" {
		return nil
	}
	snap := objectVisibility{by: map[string]analysis.Visibility{}, all: v.all}
	for k, x := range v.by {
		snap.by[k] = x
	}
	return snap.of
}

// setObjects sets the visibility of the objects of a comma-separated list ("all": every object).
func (s *session) setObjects(vis analysis.Visibility, name string) func(args []string) error {
	return func(args []string) error {
		if s.objVis.by == nil {
			s.objVis.by = map[string]analysis.Visibility{}
		}
		for _, o := range strings.Split(args[0], ",") {
			o = strings.TrimSpace(o)
			switch o {
			case "":
				return usagef("%s %q: an empty object name", name, args[0])
			case "all":
				s.objVis.all = vis
				clear(s.objVis.by)
			default:
				s.objVis.by[o] = vis
			}
		}
		s.prof, s.names, s.fragment, s.cmpProfiles = nil, nil, nil, nil // function numbers change
		return nil
	}
}

// objectsDefault shows every object's functions again.
func (s *session) objectsDefault(_ []string) error {
	s.objVis = objectVisibility{}
	s.prof, s.names, s.fragment, s.cmpProfiles = nil, nil, nil, nil
	return nil
}

func objectCommands(g []string) []*command {
	return []*command{
		{name: "object_show", group: g[3], usage: "object_show obj1,...", rc: true,
			help:    "show all the functions of the load objects (all: every object)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setObjects(analysis.ShowAll, "object_show")(a) }},
		{name: "object_hide", group: g[3], usage: "object_hide obj1,...", rc: true,
			help:    "show the load objects as one function each, named as the object",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setObjects(analysis.Hide, "object_hide")(a) }},
		{name: "object_api", group: g[3], usage: "object_api obj1,...", rc: true,
			help:    "show only the functions of the load objects that are entered from outside them (their API)",
			minArgs: 1, maxArgs: 1, run: func(s *session, a []string) error { return s.setObjects(analysis.API, "object_api")(a) }},
		{name: "objects_default", group: g[3], usage: "objects_default", help: "show all the functions of every load object again",
			run: (*session).objectsDefault},
	}
}
