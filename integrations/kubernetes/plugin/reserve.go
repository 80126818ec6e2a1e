// SPDX-License-Identifier: MIT

package topopreempt

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// Rooms reserved for other preemptors (docs/kubernetes.md, "Preemptors arriving together").
// Several preemptors pending at once must not plan the same room: the first one's victims are
// still terminating when the second one asks. As the stock scheduler does with nominations
// (RunFilterPluginsWithNominatedPods), each pending pod nominated to a node whose priority is
// at least the preemptor's (the preemptor's own pods aside) holds its requests there, as a
// workload that is never a victim: its CPU, memory, a pod slot and its GPUs (the exact devices
// its plan placed it on when the plugin nominated it, or an allocated claim's; otherwise the
// first free devices of the node, inside one NUMA node or PCIe root when its claim asks for
// that). A terminating pod (its eviction running) is never a victim (evicting it again evicts
// nobody) and holds what it holds until it is gone; only for the preemptor it was evicted for
// (Inputs.EvictedFor) is it gone already. When a nominee's room is not free yet (its victims
// still hold it, or its nomination came from elsewhere and no longer fits), its node is
// ineligible for the question, as stock's filters refuse a node its nominees fill.

// Nominee is a pending pod nominated to a node.
type Nominee struct {
	Pod  *corev1.Pod
	Node string
	// Devices are the paths below the node of the devices its plan placed it on (the plugin's
	// own nominations); empty: unknown.
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
	count, scope, exact, err := b.nomineeDevices(p)
	if err != nil {
		return Workload{}, err.Error()
	}
	if len(exact) == 0 {
		exact = nm.Devices
	}
	var devices []string
	if len(exact) > 0 && len(exact) == int(count) && allFree(exact, taken) {
		devices = exact
	} else if devices = b.freeDevices(nm.Node, int(count), scope, taken); len(devices) < int(count) {
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

// nomineeDevices is how many GPUs of the question's kind a nominee asks for, inside which
// level, and the exact devices when its claim is allocated already. A claim the model cannot
// read is an error (its node is then not free for the question).
func (b *builder) nomineeDevices(p *corev1.Pod) (count int32, scope string, exact []string, err error) {
	if b.extMode {
		return int32(extRequest(p, b.args.ExtendedResource)), "", nil, nil
	}
	claims, err := b.podClaims(p)
	var u *Unsupported
	if errors.As(err, &u) {
		return 0, "", nil, errors.New(u.Reason)
	} else if err != nil {
		return 0, "", nil, err
	}
	for _, c := range claims {
		if a := c.Status.Allocation; a != nil {
			for _, r := range a.Devices.Results {
				if !b.args.driverWanted(r.Driver) {
					continue
				}
				e, ok := b.devices[deviceKey{r.Driver, r.Pool, r.Device}]
				if !ok {
					return 0, "", nil, fmt.Errorf("ResourceClaim %s holds device %s/%s/%s that no ResourceSlice publishes", c.Name, r.Driver, r.Pool, r.Device)
				}
				exact = append(exact, e.Path)
				count++
			}
			continue
		}
		for _, r := range c.Spec.Devices.Requests {
			e := r.Exactly
			if e == nil || e.AllocationMode != resourcev1.DeviceAllocationModeExactCount {
				return 0, "", nil, fmt.Errorf("ResourceClaim %s request %s: only exactly.count is modelled", c.Name, r.Name)
			}
			count += int32(e.Count)
		}
		for _, con := range c.Spec.Devices.Constraints {
			if con.MatchAttribute == nil {
				continue
			}
			switch string(*con.MatchAttribute) {
			case NUMAAttribute:
				scope = tighter(scope, levelNUMA)
			case PCIeRootAttribute:
				scope = tighter(scope, levelPCIe)
			}
		}
	}
	return count, scope, exact, nil
}

// freeDevices are the first `count` devices of node n not in `taken`, all inside one domain of
// `scope` ("" the node) when one has that many; fewer when none has.
func (b *builder) freeDevices(n string, count int, scope string, taken map[string]bool) []string {
	var all []string
	if b.extMode {
		all = b.nodeDevs[n]
	} else {
		for _, e := range b.devices {
			if e.Host == n {
				all = append(all, e.Path)
			}
		}
		sort.Strings(all)
	}
	depth := map[string]int{levelNUMA: 1, levelPCIe: 2}[scope] // path components naming the domain
	byDomain := map[string][]string{}
	var domains []string
	for _, d := range all {
		if taken[d] {
			continue
		}
		dom := ""
		if depth > 0 {
			dom = strings.Join(strings.SplitN(d, "/", depth+1)[:depth], "/")
		}
		if _, ok := byDomain[dom]; !ok {
			domains = append(domains, dom)
		}
		byDomain[dom] = append(byDomain[dom], d)
	}
	var best []string
	for _, dom := range domains {
		if free := byDomain[dom]; len(free) >= count {
			return free[:count]
		} else if len(free) > len(best) {
			best = free
		}
	}
	return best
}
