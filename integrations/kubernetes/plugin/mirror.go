// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// mirror is a persistent C-ABI cluster kept equal to the scheduler's view of one GPU kind
// (DRA devices, or the extended resource), so that a question costs what changed since the
// last one, not a rebuild of 1,000 nodes and 10,000 pods through cgo.
//
// Every sync diffs a complete view (the cycle's snapshot in PostFilter, the informers' caches
// in the background) against what the mirror holds: the topology as a key over every node's
// labels and every ResourceSlice's identity and version (any difference rebuilds the whole
// cluster), and every running workload by its Key, compared field by field with what the C
// cluster holds (a difference finishes it and starts it again; a workload gone finishes). So
// the mirror never trusts an event to have been delivered: whatever the view says is what
// the cluster holds after the sync. An error from the C side drops the whole cluster (the
// next sync rebuilds it); an error from the view (something inexpressible) changes nothing.
//
// Thread safety: every method takes mu; the C handle is used by one goroutine at a time, each
// call pinned to its OS thread (cluster's methods).
type mirror struct {
	mu  sync.Mutex
	ext bool // extended-resource GPUs instead of DRA devices

	cl       *cluster // nil: not built
	topoKey  string
	levels   []string
	levelOf  map[string]string
	devices  map[deviceKey]Entry
	nodeDevs map[string][]string

	running map[string]*Workload // by Key: exactly what cl holds
	byID    map[uint64]*Workload
	nextID  uint64
	// preemptorIDs keeps a pending preemptor's id across its questions (the C ABI reuses an
	// incremental decider for a repeated question); bounded by clearing.
	preemptorIDs map[string]uint64

	unversioned uint64 // makes each topology key with an unversioned slice unique

	// rebuilds and changes count what syncs did (tests and logs).
	rebuilds, starts, finishes uint64
}

const maxPreemptorIDs = 4096

func newMirror(ext bool) *mirror { return &mirror{ext: ext} }

// reset drops the C cluster; the next sync rebuilds it from scratch.
func (m *mirror) reset() {
	m.cl.destroy()
	m.cl = nil
	m.topoKey = ""
	m.running, m.byID = nil, nil
}

// close frees the C cluster.
func (m *mirror) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reset()
}

// topologyKey is everything the topology is built from: each node's name, configured label
// values and (extended-resource mode) allocatable count, and each ResourceSlice of a wanted
// driver by name, uid, version and generation. An object without a resourceVersion (never
// from an API server) makes the key unique, so its topology is always rebuilt.
func (m *mirror) topologyKey(args *Args, in *Inputs) string {
	var sb strings.Builder
	nodes := append([]*corev1.Node(nil), in.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		sb.WriteString(n.Name)
		for _, k := range args.TopologyKeys {
			sb.WriteByte(0)
			sb.WriteString(n.Labels[k])
		}
		if m.ext {
			q := n.Status.Allocatable[corev1.ResourceName(args.ExtendedResource)]
			sb.WriteByte(0)
			sb.WriteString(q.String())
		}
		sb.WriteByte(1)
	}
	if !m.ext {
		slices := make([]*resourcev1.ResourceSlice, 0, len(in.Slices))
		for _, s := range in.Slices {
			if s.Spec.NodeName != nil && args.driverWanted(s.Spec.Driver) {
				slices = append(slices, s)
			}
		}
		sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
		for _, s := range slices {
			if s.ResourceVersion == "" {
				m.unversioned++
				fmt.Fprintf(&sb, "unversioned-%d", m.unversioned)
			}
			fmt.Fprintf(&sb, "%s\x00%s\x00%s\x00%d\x01", s.Name, s.UID, s.ResourceVersion, s.Generation)
		}
	}
	return sb.String()
}

// builder returns a builder over `in` that reuses the mirror's topology.
func (m *mirror) builder(args *Args, in *Inputs) *builder {
	b := &builder{args: args, in: in, devices: m.devices, nodeDevs: m.nodeDevs, levelOf: m.levelOf, extMode: m.ext}
	b.m.Levels = m.levels
	b.indexClaims()
	return b
}

// sync makes the C cluster hold exactly `in`'s running workloads (the pods in `skip`, the
// preemptor's, excepted).
func (m *mirror) sync(args *Args, in *Inputs, skip []*corev1.Pod) error {
	key := m.topologyKey(args, in)
	if m.cl == nil || key != m.topoKey {
		m.reset()
		b := &builder{args: args, in: in, devices: map[deviceKey]Entry{}, nodeDevs: map[string][]string{},
			levelOf: map[string]string{}, extMode: m.ext}
		if err := b.topology(); err != nil {
			return err
		}
		cl, err := newCluster(b.m.Levels, b.m.Domains)
		if err != nil {
			return err
		}
		m.cl, m.topoKey = cl, key
		m.levels, m.levelOf, m.devices, m.nodeDevs = b.m.Levels, b.levelOf, b.devices, b.nodeDevs
		m.running, m.byID = map[string]*Workload{}, map[uint64]*Workload{}
		// Ids from 1 in the builder's order, as a one-off model (BuildModel) numbers them.
		m.nextID, m.preemptorIDs = 0, nil
		m.rebuilds++
	}
	b := m.builder(args, in)
	if err := b.running(skip); err != nil {
		return err // nothing applied: the mirror still holds the previous view
	}
	desired := make(map[string]*Workload, len(b.m.Workloads))
	for i := range b.m.Workloads {
		w := &b.m.Workloads[i]
		if _, dup := desired[w.Key]; dup {
			return fmt.Errorf("two running workloads with key %s", w.Key)
		}
		desired[w.Key] = w
	}
	// Finish first (what left or changed), then start: the new view is a valid allocation,
	// so its starts fit once everything stale is gone.
	var stale []*Workload
	for k, cur := range m.running {
		if w, ok := desired[k]; !ok || !sameWorkload(cur, w) {
			stale = append(stale, cur)
		}
	}
	sort.Slice(stale, func(i, j int) bool { return stale[i].ID < stale[j].ID })
	for _, cur := range stale {
		if err := m.cl.finish(cur.ID, cur.Name); err != nil {
			m.reset()
			return err
		}
		delete(m.running, cur.Key)
		delete(m.byID, cur.ID)
		m.finishes++
	}
	for i := range b.m.Workloads { // in the builder's (sorted) order: ids are deterministic
		w := &b.m.Workloads[i]
		if cur, ok := m.running[w.Key]; ok {
			cur.Pods, cur.Claims = w.Pods, w.Claims // the same workload: keep the newest objects
			continue
		}
		m.nextID++
		w.ID = m.nextID
		if err := m.cl.start(w); err != nil {
			m.reset()
			return err
		}
		m.running[w.Key] = w
		m.byID[w.ID] = w
		m.starts++
	}
	return nil
}

// sameWorkload says whether two workloads are the same to the C cluster (ids aside).
func sameWorkload(a, b *Workload) bool {
	if a.Name != b.Name || a.Priority != b.Priority || a.Preemptible != b.Preemptible || a.Replicas != b.Replicas ||
		a.WholeDevices != b.WholeDevices || a.ReplicaScope != b.ReplicaScope || a.GangScope != b.GangScope ||
		a.StartTime != b.StartTime || a.SinceCkpt != b.SinceCkpt || a.ModelID != b.ModelID ||
		a.ModelGiB != b.ModelGiB || a.Extra != b.Extra || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	return true
}

// decision is a plan with the workloads it names, resolved while the mirror was locked.
type decision struct {
	plan    *Plan
	victims []*Workload
	synced  string // what the sync did, for the log: "rebuilt" or "+starts -finishes"
}

// decide syncs the mirror to `in` and asks for a plan for the preemptor `pods` (one pod, or
// the unscheduled pods of `group`).
func (m *mirror) decide(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) (*decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rebuilds, starts, finishes := m.rebuilds, m.starts, m.finishes
	if err := m.sync(args, in, pods); err != nil {
		return nil, err
	}
	synced := fmt.Sprintf("+%d -%d", m.starts-starts, m.finishes-finishes)
	if m.rebuilds != rebuilds {
		synced = "rebuilt, " + synced
	}
	b := m.builder(args, in)
	if err := b.preemptor(pods, group); err != nil {
		return nil, err
	}
	pre := b.m.Preemptor
	pre.Key = "preemptor/pod/" + string(pods[0].UID)
	if group != nil {
		pre.Key = "preemptor/podgroup/" + group.Namespace + "/" + group.Name + "/" + string(group.UID)
	}
	if m.preemptorIDs == nil || len(m.preemptorIDs) >= maxPreemptorIDs {
		m.preemptorIDs = map[string]uint64{}
	}
	id, ok := m.preemptorIDs[pre.Key]
	if !ok {
		m.nextID++
		id = m.nextID
		m.preemptorIDs[pre.Key] = id
	}
	pre.ID = id
	plan, err := m.cl.plan(&pre, args)
	if err != nil {
		m.reset() // the cluster may be fine, but a fresh one is the safe answer to a C error
		return nil, err
	}
	d := &decision{plan: plan, synced: synced}
	for _, v := range plan.Victims {
		w, ok := m.byID[v]
		if !ok {
			return nil, fmt.Errorf("topopreempt: the plan names unknown workload %d", v)
		}
		d.victims = append(d.victims, w)
	}
	return d, nil
}
