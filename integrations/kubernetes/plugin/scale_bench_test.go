// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// scaleState is the e2e harness's kwok-scale shape: n nodes in racks of 10, each with six GPU
// pods holding all 8 GPUs (4 single, 2 double) and four GPU-less pods; a quarter of the nodes
// high priority. Costs vary deterministically.
func scaleState(n int) (*tState, *corev1.Pod) {
	s := newTState()
	for i := 0; i < n; i++ {
		node := fmt.Sprintf("kwok-%04d", i)
		s.node(node, fmt.Sprintf("rack-%d", i/10))
		prio := int32(100 + 10*(i%3))
		if i%4 == 3 {
			prio = 1000
		}
		for k, gpus := range [][]int{{0}, {1}, {2, 3}, {4, 5}, {6}, {7}} {
			s.run(fmt.Sprintf("%s-p%d", node, k), node, prio, fmt.Sprint(1+(i*7+k*3)%20), gpus...)
		}
		for k := 0; k < 4; k++ {
			p := tPod(fmt.Sprintf("%s-c%d", node, k), prio, "", nil)
			p.Spec.NodeName = node
			s.in.Pods[node] = append(s.in.Pods[node], p)
		}
	}
	s.claim("pre-gpus", 4, NUMAAttribute)
	return s, tPod("pre", 500, "pre-gpus", nil)
}

func BenchmarkBuildModel1000(b *testing.B) {
	s, pre := scaleState(1000)
	for b.Loop() {
		if _, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{pre}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSolve1000(b *testing.B) {
	s, pre := scaleState(1000)
	m, err := BuildModel(tArgs(), &s.in, []*corev1.Pod{pre}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Solve(m, tArgs()); err != nil {
			b.Fatal(err)
		}
	}
}
