// SPDX-License-Identifier: MIT

package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestDecidedFromLog(t *testing.T) {
	log := `I1126 06:20:19.155223    7254 plugin.go:244] "topopreempt: preempting" pod="ns-a/numa4-s00-0" node="kwok-0001" victims=3 cost=5 status="optimal" decided="5.812345ms" solve="1.2ms" synced="+0 -0"
I1126 06:20:20.000000    7254 plugin.go:244] "topopreempt: preempting" pod="ns-b/numa4-s00-0" node="kwok-0002" decided="9ms"
I1126 06:20:21.000000    7254 plugin.go:244] "topopreempt: preempting" pod="ns-a/numa4-s01-0" node="kwok-0003" decided="850µs"
I1126 06:20:22.000000    7254 plugin.go:230] "topopreempt: falling back to DefaultPreemption" pod="ns-a/numa4-s02-0" reason="x"
`
	path := filepath.Join(t.TempDir(), "scheduler.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := decidedFromLog(path, "ns-a")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"numa4-s00-0": {5.812345}, "numa4-s01-0": {0.85}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestExactQuantiles(t *testing.T) {
	var xs []float64
	for i := 20; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	p50, p90, p99, max := exactQuantiles(xs)
	if p50 != 10 || p90 != 18 || p99 != 20 || max != 20 {
		t.Errorf("got %g %g %g %g, want 10 18 20 20", p50, p90, p99, max)
	}
	if a, b, c, d := exactQuantiles(nil); a+b+c+d != 0 {
		t.Error("empty: want zeros")
	}
}

// The k cheapest NUMA nodes: for k = 1 the single cheapest; growing with k.
func TestCheapestNUMAs(t *testing.T) {
	s := scale(100, 1)
	cost1, victims1, _ := cheapestNUMA(s)
	if c, v, _ := cheapestNUMAs(s, 1); c != cost1 || v != victims1 {
		t.Errorf("k=1: %g/%d, want %g/%d", c, v, cost1, victims1)
	}
	c5, _, _ := cheapestNUMAs(s, 5)
	c6, _, _ := cheapestNUMAs(s, 6)
	if c5 < cost1 || c6 < c5 {
		t.Errorf("not monotone: %g %g %g", cost1, c5, c6)
	}
	if s20 := scale(100, 20); s20.Preemptors != 20 || s.Preemptors != 0 {
		t.Errorf("Preemptors: %d, %d", s20.Preemptors, s.Preemptors)
	}
}
