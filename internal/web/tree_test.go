package web

import (
	"strconv"
	"strings"
	"testing"
)

// TestTreeAndFlame checks the call tree's hot path and the flame graph's boxes.
func TestTreeAndFlame(t *testing.T) {
	_, ts, _ := testServer(t)
	var tr table
	get(t, ts, "/api/tree?node=0&hot=1", 200, &tr)
	// <Total>, then its children main and worker; main open: work; work open: leafA, leafB
	// (equal: by name); leafA has no children.
	want := "<Total>,main,work,leafA,leafB,worker"
	if got := strings.Join(rowNames(tr.Rows), ","); got != want {
		t.Errorf("hot path rows %s, want %s", got, want)
	}
	worker := findRow(t, tr.Rows, "worker")
	var kids table
	get(t, ts, "/api/tree?node="+strconv.Itoa(worker.Node), 200, &kids)
	if len(kids.Rows) != 1 || kids.Rows[0].Name != cppName || kids.Rows[0].Cells[1].V != 200*period || kids.Rows[0].Depth != 2 {
		t.Errorf("worker's children: %+v", kids.Rows)
	}
	get(t, ts, "/api/tree?node=100000", 400, nil)

	var fg struct {
		Nodes []flameNode      `json:"nodes"`
		Names map[int]string   `json:"names"`
		Total int64            `json:"total"`
		Path  []map[string]any `json:"path"`
	}
	get(t, ts, "/api/flame", 200, &fg)
	if fg.Total != 450*period || len(fg.Nodes) != 7 || fg.Nodes[0].Value != fg.Total {
		t.Fatalf("flame: total %d, %d nodes: %+v", fg.Total, len(fg.Nodes), fg.Nodes)
	}
	sum := map[int]int64{}
	for i, n := range fg.Nodes[1:] {
		if n.Parent < 0 || n.Parent > i {
			t.Errorf("node %d's parent %d is not before it", i+1, n.Parent)
		}
		sum[n.Parent] += n.Value
	}
	for i, n := range fg.Nodes {
		if sum[i]+n.Self != n.Value {
			t.Errorf("%s: children %d + self %d != %d", fg.Names[n.Func], sum[i], n.Self, n.Value)
		}
	}
	get(t, ts, "/api/flame?root="+strconv.Itoa(worker.Node), 200, &fg)
	if len(fg.Nodes) != 2 || fg.Nodes[0].Value != 200*period || len(fg.Path) != 1 {
		t.Errorf("flame under worker: %+v, path %v", fg.Nodes, fg.Path)
	}
}
