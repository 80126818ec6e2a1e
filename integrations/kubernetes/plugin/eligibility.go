// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Node eligibility (docs/kubernetes.md, "Which nodes may take the preemptor"). A node is
// ineligible when the preemptor is refused there for a reason no eviction can change: the
// scheduler's own verdict (Inputs.Refused, from PostFilter's statuses), the filters that read
// only the pod's spec and the node (NodeName, NodeUnschedulable, NodeAffinity with the
// nodeSelector, TaintToleration: the same helpers the scheduler's plugins call), or, for a gang
// constrained to a topology level, a node without that level's label. An ineligible node holds
// a blocker (see dimEligible), so no replica is planned there and none of its pods is evicted
// for it. Nodes without GPUs of the question's kind never take the preemptor anyway.

// NodeRefuses says why the scheduler's spec-only filters refuse pod p on node n ("" if they
// do not), in the order the default profile runs them. comparisonOperators is the
// TaintTolerationComparisonOperators feature gate.
func NodeRefuses(p *corev1.Pod, n *corev1.Node, comparisonOperators bool) string {
	if p.Spec.NodeName != "" && p.Spec.NodeName != n.Name {
		return "NodeName: the pod asks for node " + p.Spec.NodeName
	}
	logger := klog.Background()
	if n.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(logger, p.Spec.Tolerations,
		&corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}, comparisonOperators) {
		return "NodeUnschedulable: the node is unschedulable"
	}
	if t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logger, n.Spec.Taints, p.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, comparisonOperators); untolerated {
		return fmt.Sprintf("TaintToleration: untolerated taint %s=%s:%s", t.Key, t.Value, t.Effect)
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil {
		return "NodeAffinity: " + err.Error()
	} else if !ok {
		return "NodeAffinity: the node does not match the pod's node selector or required affinity"
	}
	return ""
}

// ineligible lists the GPU nodes the preemptor (pods, b.m.Preemptor already built) may not
// use, with the reason.
func (b *builder) ineligible(pods []*corev1.Pod) map[string]string {
	gangKey := ""
	if scope := b.m.Preemptor.GangScope; scope != "" && scope != levelNode {
		for k, l := range b.levelOf {
			if l == scope {
				gangKey = k
			}
		}
	}
	out := map[string]string{}
	for _, n := range b.in.Nodes {
		if !b.gpuNodes[n.Name] {
			continue
		}
		if r, ok := b.in.Refused[n.Name]; ok {
			out[n.Name] = r
			continue
		}
		if gangKey != "" && slices.Contains(b.unlabelled[n.Name], gangKey) {
			out[n.Name] = "no label " + gangKey + ", the gang's topology key"
			continue
		}
		for _, p := range pods {
			if r := NodeRefuses(p, n, b.in.TolerationComparisonOperators); r != "" {
				out[n.Name] = r
				break
			}
		}
	}
	return out
}

// blocker is the running workload that keeps the preemptor off an ineligible node: all of its
// `eligible`, never a victim.
func blocker(node, reason string) Workload {
	var hold Pooled
	hold[dimEligible] = eligibleCapacity
	return Workload{Key: "blocker/" + node, Name: "ineligible node " + node + " (" + reason + ")",
		Priority: math.MaxInt32, Preemptible: false, Replicas: 1, Demand: hold,
		Entries: []Entry{{Host: node, Amounts: hold}}}
}

// sortedNodes are the map's keys in order.
func sortedNodes[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
