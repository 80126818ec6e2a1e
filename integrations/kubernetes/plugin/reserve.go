// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// Rooms reserved for other preemptors (docs/kubernetes.md, "Preemptors arriving together").
// Several preemptors pending at once must not plan the same room: the first one's victims are
// still terminating when the second one asks. As the stock scheduler does with nominations
// (RunFilterPluginsWithNominatedPods), each pending pod nominated to a node whose priority is
// at least the preemptor's (the preemptor's own pods aside) holds its requests there, as a
// workload that is never a victim: its CPU, memory, a pod slot and, with the extended
// resource, its GPUs (the devices its plan placed it on when the plugin nominated it,
// otherwise the node's first free ones). With DRA, a nominee that has a ResourceClaim closes
// its node instead, as the plugin's Filter does (see reservedAgainst): the scheduler's
// DynamicResources filter does not count nominations' devices. A terminating pod (its
// eviction running) is never a victim (evicting it again evicts nobody) and holds what it
// holds until it is gone; only for the preemptor it was evicted for (Inputs.EvictedFor) is it
// gone already. When a nominee's room is not free yet (its victims still hold it, or a
// nomination from elsewhere no longer fits), its node is ineligible for the question, as
// stock's filters refuse a node its nominees fill.

// Nominee is a pending pod nominated to a node.
type Nominee struct {
	Pod  *corev1.Pod
	Node string
	// Devices are the paths below the node of the devices its plan placed it on (the plugin's
	// own nominations); empty: unknown. Used with the extended resource (see reservations).
	Devices []string
}

// selfUIDs are the preemptor's pods' UIDs and its PodGroup's.
func selfUIDs(pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) map[types.UID]bool {
	self := podUIDs(pods)
	if group != nil {
		self[group.UID] = true
	}
	return self
}

// goneFor are the terminating pods evicted for the preemptor (self): gone already for it.
func goneFor(in *Inputs, self map[types.UID]bool) []*corev1.Pod {
	if len(in.EvictedFor) == 0 {
		return nil
	}
	var out []*corev1.Pod
	for _, n := range sortedNodes(in.Pods) {
		for _, p := range in.Pods[n] {
			if p.DeletionTimestamp != nil && self[in.EvictedFor[p.UID]] {
				out = append(out, p)
			}
		}
	}
	return out
}

// reservations are the workloads that hold the rooms of the nominees the preemptor (pods, b's
// Preemptor built) must leave alone, and the GPU nodes where a nominee's room is not free,
// with the reason. held(n) is node n's running pods as the model holds them (the pods gone for
// the preemptor excepted). Nodes in `skip` (already ineligible) reserve nothing.
func (b *builder) reservations(self map[types.UID]bool, held func(node string) []*heldPod, skip map[string]string) ([]Workload, map[string]string) {
	running := map[types.UID]bool{}
	for _, pods := range b.in.Pods {
		for _, p := range pods {
			running[p.UID] = true
		}
	}
	byNode := map[string][]Nominee{}
	seen := map[types.UID]bool{}
	for _, nm := range b.in.Nominated { // the first entry of a pod wins (the plugin lists its own first)
		p := nm.Pod
		if seen[p.UID] {
			continue
		}
		seen[p.UID] = true
		if self[p.UID] || running[p.UID] || podPriority(p) < b.m.Preemptor.Priority || !b.gpuNodes[nm.Node] {
			continue
		}
		if _, out := skip[nm.Node]; out {
			continue
		}
		byNode[nm.Node] = append(byNode[nm.Node], nm)
	}
	var ws []Workload
	refused := map[string]string{}
	for _, n := range sortedNodes(byNode) {
		nominees := byNode[n]
		sort.Slice(nominees, func(i, j int) bool {
			a, c := nominees[i].Pod, nominees[j].Pod
			if a.Namespace != c.Namespace {
				return a.Namespace < c.Namespace
			}
			return a.Name < c.Name
		})
		taken := map[string]bool{}
		var total Pooled
		for _, h := range held(n) {
			for _, e := range h.entries {
				if e.Path != "" {
					taken[e.Path] = true
				}
			}
			for d, v := range h.demand {
				total[d] += v
			}
		}
		var node []Workload
		for _, nm := range nominees {
			if !b.extMode {
				// As the plugin's Filter: DynamicResources would hand the nominee's devices
				// to the preemptor, so the node is closed while a DRA nominee waits for it.
				if why := reservedAgainst(b.m.Preemptor.Pods[0], []*corev1.Pod{nm.Pod}); why != "" {
					refused[n] = why
					node = nil
					break
				}
			}
			w, why := b.reservation(nm, taken, &total)
			if why != "" {
				refused[n] = fmt.Sprintf("reserved for nominated pod %s/%s: %s", nm.Pod.Namespace, nm.Pod.Name, why)
				node = nil
				break
			}
			node = append(node, w)
		}
		ws = append(ws, node...)
	}
	return ws, refused
}

// reservation is the workload that holds nominee nm's room, taking its devices out of `taken`
// and adding its requests to `total` (the node's); why says why its room is not free.
func (b *builder) reservation(nm Nominee, taken map[string]bool, total *Pooled) (Workload, string) {
	p := nm.Pod
	demand, _ := podRequests(p)
	for d, v := range demand {
		if v < 0 {
			return Workload{}, "a negative request of " + PooledNames[d]
		}
		total[d] += v
		if total[d] > b.nodeCap[nm.Node][d] {
			return Workload{}, fmt.Sprintf("its %s does not fit beside the node's pods", PooledNames[d])
		}
	}
	count, exact := b.nomineeDevices(p), nm.Devices
	var devices []string
	if len(exact) > 0 && len(exact) == int(count) && allFree(exact, taken) {
		devices = exact
	} else if devices = b.freeDevices(nm.Node, int(count), taken); len(devices) < int(count) {
		return Workload{}, fmt.Sprintf("%d of its %d GPUs are free", len(devices), count)
	}
	w := Workload{Key: "nominated/" + string(p.UID), Name: "nominated pod " + p.Namespace + "/" + p.Name,
		Priority: podPriority(p), Preemptible: false, Replicas: 1, WholeDevices: count, Demand: demand}
	for _, d := range devices {
		taken[d] = true
		w.Entries = append(w.Entries, Entry{Host: nm.Node, Path: d})
	}
	w.Entries = append(w.Entries, Entry{Host: nm.Node, Amounts: demand})
	return w, ""
}

func allFree(paths []string, taken map[string]bool) bool {
	for _, p := range paths {
		if taken[p] {
			return false
		}
	}
	return true
}

// nomineeDevices is how many GPUs of the question's kind a nominee asks for: the extended
// resource's count; with DRA none (a nominee with a ResourceClaim closes its node, see
// reservations), so it holds its pooled requests only.
func (b *builder) nomineeDevices(p *corev1.Pod) int32 {
	if !b.extMode {
		return 0
	}
	return int32(extRequest(p, b.args.ExtendedResource))
}

// freeDevices are the first `count` extended-resource devices of node n not in `taken` (all
// of a node's share one unknown NUMA domain), or all free ones when fewer.
func (b *builder) freeDevices(n string, count int, taken map[string]bool) []string {
	var free []string
	for _, d := range b.nodeDevs[n] {
		if !taken[d] && len(free) < count {
			free = append(free, d)
		}
	}
	return free
}

// reservedAgainst says why a node is closed to pod p ("" if it is not): another pending pod of
// at least p's priority, and not of p's own PodGroup (a gang's pods may share a node), is
// nominated to it and asks for GPUs through DRA. The Filter of this
// plugin applies it to pods that ask for DRA devices: the scheduler's DynamicResources filter
// allocates from the devices free now and does not count nominated pods' claims (stock's
// RunFilterPluginsWithNominatedPods adds nominees to the NodeInfo, which covers CPU, memory
// and extended resources, not ResourceClaims), so without it a pending pod whose own room is
// still being freed takes the room just freed for another, and that one preempts again.
// Coarse on purpose: the whole node, not the nominee's devices only; it lasts until the nominee
// binds or loses its nomination.
func reservedAgainst(p *corev1.Pod, nominees []*corev1.Pod) string {
	for _, n := range nominees {
		if n.UID == p.UID || podPriority(n) < podPriority(p) || len(n.Spec.ResourceClaims) == 0 || sameGroup(n, p) {
			continue
		}
		return fmt.Sprintf("reserved for nominated pod %s/%s (DynamicResources does not count a nomination's devices)", n.Namespace, n.Name)
	}
	return ""
}

// sameGroup says whether two pods name the same PodGroup.
func sameGroup(a, b *corev1.Pod) bool {
	ga, gb := a.Spec.SchedulingGroup, b.Spec.SchedulingGroup
	return a.Namespace == b.Namespace && ga != nil && gb != nil && ga.PodGroupName != nil && gb.PodGroupName != nil &&
		*ga.PodGroupName == *gb.PodGroupName
}
