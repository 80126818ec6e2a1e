// SPDX-License-Identifier: MIT

package cluster

import (
	"math"
	"testing"
)

// Quantile interpolates inside the bucket holding the rank, as PromQL's histogram_quantile.
func TestSampleQuantile(t *testing.T) {
	s := Sample{Count: 100, Buckets: map[float64]float64{0.001: 50, 0.002: 90, 0.004: 100, math.Inf(1): 100}}
	for _, c := range []struct{ q, want float64 }{{0.5, 0.001}, {0.25, 0.0005}, {0.7, 0.0015}, {0.99, 0.0038}} {
		if got := s.Quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(%g) = %g, want %g", c.q, got, c.want)
		}
	}
	inf := Sample{Count: 2, Buckets: map[float64]float64{0.1: 1, math.Inf(1): 2}}
	if got := inf.Quantile(0.99); got != 0.1 {
		t.Errorf("a quantile in +Inf: got %g, want the highest finite bound 0.1", got)
	}
	if got := (Sample{}).Quantile(0.5); got != 0 {
		t.Errorf("no observations: got %g, want 0", got)
	}
}
