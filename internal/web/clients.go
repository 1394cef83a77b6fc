package web

import (
	"container/list"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// The views of the pages. A page names itself in the header X-Er-Client, an id it draws at random
// and keeps for the tab's life (sessionStorage), and gets a view of its own (a Server): its filter,
// metrics and sort change no other page's. The views are bounded: at most maxViews, the least
// recently used dropped beyond, and none kept idle longer than viewIdle. A page whose view was
// dropped is answered 409 with {"view": "gone"}: it draws a new id, sets its filter, metrics and
// sort again and asks once more. Only the maxLive most recently used views keep their profiles (at
// 1.2 million samples in 50,000 stacks, 18 MB each); the others keep their filter, metrics and sort,
// and compute their profile again when next asked. Requests that name no client (curl, scripts)
// share one view, the Server that Open returned.
const (
	clientHeader = "X-Er-Client"
	maxViews     = 256
	maxLive      = 16
	viewIdle     = time.Hour
	maxGone      = 4096 // the ids of dropped views remembered, to answer them 409 rather than start afresh
)

// viewSet is the views of the pages, most recently used first.
type viewSet struct {
	mu    sync.Mutex
	def   *Server
	byID  map[string]*list.Element // of *viewEntry
	lru   list.List
	gone  map[string]bool
	order []string // of gone, oldest first
	limit int      // maxViews; tests set fewer
}

type viewEntry struct {
	id   string
	v    *Server
	used time.Time
}

// of returns the view of r's client, made on its first request.
func (vs *viewSet) of(r *http.Request, sh *shared) (*Server, error) {
	id := r.Header.Get(clientHeader)
	if id == "" {
		return vs.def, nil
	}
	if !validClientID(id) {
		return nil, badRequest("header %s: %s is not a client id (8 to 64 letters, digits, '-' and '_')", clientHeader, clip(id))
	}
	now := time.Now()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.byID == nil {
		vs.byID, vs.gone = map[string]*list.Element{}, map[string]bool{}
	}
	for e := vs.lru.Back(); e != nil && now.Sub(e.Value.(*viewEntry).used) > viewIdle; e = vs.lru.Back() {
		vs.drop(e)
	}
	if e, ok := vs.byID[id]; ok {
		ve := e.Value.(*viewEntry)
		ve.used = now
		vs.lru.MoveToFront(e)
		vs.release()
		return ve.v, nil
	}
	if vs.gone[id] {
		return nil, &apiError{code: http.StatusConflict, gone: true,
			msg: fmt.Sprintf("this page's view (its filter, metrics and sort) was dropped: more than %d pages used er analyzer, or it was idle for %v; reload the page", vs.max(), viewIdle)}
	}
	v := sh.newView()
	vs.byID[id] = vs.lru.PushFront(&viewEntry{id: id, v: v, used: now})
	for vs.lru.Len() > vs.max() {
		vs.drop(vs.lru.Back())
	}
	vs.release()
	return v, nil
}

// release drops the profiles of the view that the last use made the (maxLive+1)th most recently
// used, unless it is serving a request (it is then in use again).
func (vs *viewSet) release() {
	e := vs.lru.Front()
	for i := 0; i < maxLive && e != nil; i++ {
		e = e.Next()
	}
	if e == nil {
		return
	}
	if v := e.Value.(*viewEntry).v; v.mu.TryLock() {
		v.release()
		v.mu.Unlock()
	}
}

func (vs *viewSet) max() int {
	if vs.limit > 0 {
		return vs.limit
	}
	return maxViews
}

// drop forgets the view of e, remembering its id.
func (vs *viewSet) drop(e *list.Element) {
	ve := vs.lru.Remove(e).(*viewEntry)
	delete(vs.byID, ve.id)
	vs.gone[ve.id] = true
	vs.order = append(vs.order, ve.id)
	if len(vs.order) > maxGone {
		delete(vs.gone, vs.order[0])
		vs.order = vs.order[1:]
	}
}

// validClientID: 8 to 64 of letters, digits, '-' and '_' (app.js draws 32 hexadecimal digits).
func validClientID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// release drops what the view computed for its selection, keeping the selection; s.mu is held.
func (s *Server) release() {
	s.eng.Release()
	for _, e := range s.cmp {
		e.Release()
	}
	s.tree, s.ids, s.idsOf = nil, nil, nil
}
