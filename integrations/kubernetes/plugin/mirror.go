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
	"k8s.io/apimachinery/pkg/types"
)

// mirror is a persistent C-ABI cluster kept equal to the scheduler's view of one GPU kind
// (DRA devices, or the extended resource), so that a question costs what changed since the
// last one, not a rebuild of 1,000 nodes and 10,000 pods through cgo.
//
// Every sync compares a complete view (the cycle's snapshot in PostFilter, the informers'
// caches in the background) with what the mirror derived at the last one: the topology as a
// key over every node's labels and every ResourceSlice's identity and version (any difference
// rebuilds the whole cluster), then each node by its pods' and their ResourceClaims' uids and
// resourceVersions (why not the NodeInfo generation: see unchanged). Only a node that differs
// (or appeared, lost its pods, holds a preemptor's pod, or holds an object without a
// resourceVersion) is derived again, and only the workloads its pods were or are in (with
// every member of a PodGroup they name, and of a PodGroup whose object changed) are regrouped
// and compared field by field with what the C cluster holds (a difference finishes it and
// starts it again; a workload gone finishes). So a sync costs the changed nodes plus a few
// comparisons per pod, and the mirror never trusts an event to have been delivered: whatever
// the view says is what the cluster holds after the sync. With a lost_work cost term every
// node is derived at every sync, since the seconds since a checkpoint move with the clock. An
// error from the C side drops the whole cluster (the next sync rebuilds it); an error from the
// view (something inexpressible) changes nothing.
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
	// nodeCap, gpuNodes, unlabelled: the builder's, from the topology (see builder).
	nodeCap    map[string]Pooled
	gpuNodes   map[string]bool
	unlabelled map[string][]string

	running map[string]*Workload // by Key: exactly what cl holds (all preemptible; see protectedNow)
	// What the last question added on top of the view: a blocker on each node the preemptor
	// could not use (by node: its id and reason), and the running workloads the C cluster
	// holds as not preemptible because of a PDB (by key). The next question changes only the
	// difference; a sync that finishes a workload forgets its protection.
	blockers     map[string]blockerState
	protectedNow map[string]bool
	// reserved are the rooms the last question reserved for nominated pods (see reserve.go),
	// by id. They are released before each sync, since a nominee that has been bound since
	// holds the same devices as a running pod, and started again after it.
	reserved map[uint64]string
	byID     map[uint64]*Workload
	nextID   uint64
	// preemptorIDs keeps a pending preemptor's id across its questions (the C ABI reuses an
	// incremental decider for a repeated question); bounded by clearing.
	preemptorIDs map[string]uint64

	unversioned uint64 // makes each topology key with an unversioned slice unique

	// What the running workloads were derived from, to derive again only what changed.
	nodes   map[string]*nodeState  // by node name
	podNode map[types.UID]string   // every pod of nodes, to its node
	groups  map[string]*groupState // PodGroups held pods name, by "<namespace>/<name>"

	// rebuilds and changes count what syncs did (tests and logs); derived counts nodes
	// derived again.
	rebuilds, starts, finishes, derived uint64
}

const maxPreemptorIDs = 4096

func newMirror(ext bool) *mirror { return &mirror{ext: ext} }

// blockerState is one started blocker.
type blockerState struct {
	id     uint64
	reason string
}

// reset drops the C cluster; the next sync rebuilds it from scratch.
func (m *mirror) reset() {
	m.cl.destroy()
	m.cl = nil
	m.topoKey = ""
	m.running, m.byID = nil, nil
	m.nodes, m.podNode, m.groups = nil, nil, nil
	m.blockers, m.protectedNow, m.reserved = nil, nil, nil
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
			if v, ok := n.Labels[k]; ok {
				sb.WriteByte(1) // "no label" and an empty value are both a domain of its own
				sb.WriteString(v)
			}
		}
		a := n.Status.Allocatable
		fmt.Fprintf(&sb, "\x00%d\x00%d\x00%d", a.Cpu().MilliValue(), a.Memory().Value(), a.Pods().Value())
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
	b := &builder{args: args, in: in, devices: m.devices, nodeDevs: m.nodeDevs, levelOf: m.levelOf, extMode: m.ext,
		nodeCap: m.nodeCap, gpuNodes: m.gpuNodes, unlabelled: m.unlabelled}
	b.m.Levels = m.levels
	b.indexClaims()
	return b
}

// nodeState is what the mirror derived from one node at its last sync, with what that
// derivation read, so that the next sync can tell whether the node must be derived again.
type nodeState struct {
	pods     map[types.UID]string // every pod on the node: its resourceVersion
	claims   []claimStamp         // the ResourceClaims those pods use
	volatile bool                 // derive again at the next sync whatever the stamps say
	held     []*heldPod           // its pods, in the builder's order
}

// objectStamp identifies one version of an API object.
type objectStamp struct {
	uid     types.UID
	version string
}

// claimStamp is a ResourceClaim a pod used, by name, and the version the derivation read.
type claimStamp struct {
	key objectKey
	objectStamp
}

// groupState is a PodGroup that held pods name: the version their workloads were grouped by,
// and the nodes holding them.
type groupState struct {
	found    bool
	volatile bool // an unversioned PodGroup: regroup at the next sync
	objectStamp
	nodes map[string]bool
}

// stampOf is the object's identity and version; ok is false for an object without a
// resourceVersion (never from an API server), which is then always treated as changed.
func stampOf(uid types.UID, version string) (objectStamp, bool) {
	return objectStamp{uid, version}, version != ""
}

// unchanged says whether node n, as `in` has it now, is what the mirror derived `old` from:
// the same pods at the same versions, and the same versions of their claims (an API object is
// replaced, never changed in place, and a change moves its resourceVersion). This is exactly
// what a derivation reads besides the topology (its own key) and the PodGroups (compared by
// sync). The scheduler's per-node NodeInfo generation is not used: the snapshot assumes a
// PodGroup's pods during its cycle and restores the generation (Snapshot.AssumePod/ForgetPod),
// so an equal generation does not prove equal pods; a claim's allocation moves no generation;
// and every Node status update moves it (SetNode) while changing nothing the mirror reads. The
// comparison costs a few string comparisons per pod; a derivation costs building its workload.
func unchanged(old *nodeState, in *Inputs, n string, b *builder) bool {
	if old.volatile {
		return false
	}
	pods := in.Pods[n]
	if len(pods) != len(old.pods) {
		return false
	}
	// By uid, not in order: the informers list a node's pods in another order than the
	// snapshot, and the background sync and PostFilter alternate.
	for _, p := range pods {
		if v, ok := old.pods[p.UID]; !ok || p.ResourceVersion == "" || v != p.ResourceVersion {
			return false
		}
	}
	for _, c := range old.claims {
		cur, found := b.claims[c.key]
		if !found {
			return false
		}
		if s, ok := stampOf(cur.UID, cur.ResourceVersion); !ok || s != c.objectStamp {
			return false
		}
	}
	return true
}

// derive builds node n's state from `in`.
func derive(b *builder, in *Inputs, n string, skip map[types.UID]bool) (*nodeState, error) {
	held, skipped, err := b.nodeHeld(n, skip)
	if err != nil {
		return nil, err
	}
	st := &nodeState{held: held, volatile: skipped || b.args.usesLostWork(), pods: make(map[types.UID]string, len(in.Pods[n]))}
	for _, h := range held {
		// An allocation in flight moves no version when it is written or dropped.
		st.volatile = st.volatile || h.inFlight
	}
	for _, p := range in.Pods[n] {
		_, dup := st.pods[p.UID]
		st.volatile = st.volatile || p.ResourceVersion == "" || dup
		st.pods[p.UID] = p.ResourceVersion
		if skip[p.UID] {
			continue // not derived (a preemptor's pod), and the node is volatile
		}
		claims, err := b.podClaims(p)
		if err != nil {
			// A claim not created yet (its pod holds what it may be given, see nodeHeld):
			// derive the node again at the next sync, when it may exist.
			st.volatile = true
			continue
		}
		for _, c := range claims {
			s, ok := stampOf(c.UID, c.ResourceVersion)
			st.volatile = st.volatile || !ok
			st.claims = append(st.claims, claimStamp{objectKey{c.Namespace, c.Name}, s})
		}
	}
	return st, nil
}

// groupStamp is how `in` has the PodGroup "<namespace>/<name>" now.
func groupStamp(b *builder, key string) (found bool, s objectStamp, ok bool) {
	ns, name, _ := strings.Cut(key, "/")
	g := b.podGroup(ns, name)
	if g == nil {
		return false, objectStamp{}, true
	}
	s, ok = stampOf(g.UID, g.ResourceVersion)
	return true, s, ok
}

// sync makes the C cluster hold exactly `in`'s running workloads (the pods in `skip`, the
// preemptor's, excepted), deriving again only the nodes that changed since the last sync and
// regrouping only the workloads those nodes (or a changed PodGroup) touch.
func (m *mirror) sync(args *Args, in *Inputs, skip []*corev1.Pod) error {
	key := m.topologyKey(args, in)
	if m.cl == nil || key != m.topoKey {
		m.reset()
		b := newBuilder(args, in, m.ext)
		if err := b.topology(); err != nil {
			return err
		}
		cl, err := newCluster(b.m.Levels, b.m.Domains)
		if err != nil {
			return err
		}
		m.cl, m.topoKey = cl, key
		m.levels, m.levelOf, m.devices, m.nodeDevs = b.m.Levels, b.levelOf, b.devices, b.nodeDevs
		m.nodeCap, m.gpuNodes, m.unlabelled = b.nodeCap, b.gpuNodes, b.unlabelled
		m.blockers, m.protectedNow, m.reserved = map[string]blockerState{}, map[string]bool{}, map[uint64]string{}
		m.running, m.byID = map[string]*Workload{}, map[uint64]*Workload{}
		m.nodes, m.podNode, m.groups = map[string]*nodeState{}, map[types.UID]string{}, map[string]*groupState{}
		// Ids from 1 in the builder's order, as a one-off model (BuildModel) numbers them.
		m.nextID, m.preemptorIDs = 0, nil
		m.rebuilds++
	}
	b := m.builder(args, in)
	skipSet := podUIDs(skip)

	// The nodes to derive again: changed, appeared, gone, or holding a preemptor's pod.
	changed := map[string]bool{}
	for n := range in.Pods {
		if old, ok := m.nodes[n]; !ok || !unchanged(old, in, n, b) {
			changed[n] = true
		}
	}
	for n := range m.nodes {
		if _, ok := in.Pods[n]; !ok {
			changed[n] = true
		}
	}
	for uid := range skipSet {
		if n, ok := m.podNode[uid]; ok {
			changed[n] = true
		}
	}
	fresh := make(map[string]*nodeState, len(changed)) // nil: the node is gone
	for _, n := range sortedKeys(changed) {
		if _, ok := in.Pods[n]; !ok {
			fresh[n] = nil
			continue
		}
		st, err := derive(b, in, n, skipSet)
		if err != nil {
			return err // nothing applied: the mirror still holds the previous view
		}
		fresh[n] = st
		m.derived++
	}
	now := func(n string) *nodeState {
		if st, ok := fresh[n]; ok {
			return st
		}
		return m.nodes[n]
	}

	// The PodGroups to regroup: those named on a changed node, before or after, and those
	// whose object changed. Then the nodes holding their members, before and after.
	touched := map[string]bool{}
	for n, st := range fresh {
		for _, sts := range []*nodeState{m.nodes[n], st} {
			if sts == nil {
				continue
			}
			for _, h := range sts.held {
				if h.group != "" {
					touched[h.group] = true
				}
			}
		}
	}
	for g, gs := range m.groups {
		if found, s, ok := groupStamp(b, g); gs.volatile || !ok || found != gs.found || s != gs.objectStamp {
			touched[g] = true
		}
	}
	members := make(map[string]map[string]bool, len(touched)) // group -> nodes holding it now
	for g := range touched {
		members[g] = map[string]bool{}
		if gs, ok := m.groups[g]; ok {
			for n := range gs.nodes {
				if _, refreshed := fresh[n]; !refreshed {
					members[g][n] = true
				}
			}
		}
	}
	for n, st := range fresh {
		if st == nil {
			continue
		}
		for _, h := range st.held {
			if h.group != "" {
				members[h.group][n] = true
			}
		}
	}

	// What to regroup (now) and what it replaces (before): every held pod of a changed node,
	// and every member of a touched PodGroup, in the builder's order.
	visit := map[string]bool{}
	for n := range fresh {
		visit[n] = true
	}
	for g := range touched {
		for n := range members[g] {
			visit[n] = true
		}
		if gs, ok := m.groups[g]; ok {
			for n := range gs.nodes {
				visit[n] = true
			}
		}
	}
	var regroup []*heldPod
	before := map[string]bool{} // workload keys the regrouped pods were in
	for _, n := range sortedKeys(visit) {
		_, refreshed := fresh[n]
		if old := m.nodes[n]; old != nil {
			for _, h := range old.held {
				if refreshed || touched[h.group] {
					before[h.key] = true
				}
			}
		}
		if st := now(n); st != nil {
			for _, h := range st.held {
				if refreshed || touched[h.group] {
					regroup = append(regroup, h)
				}
			}
		}
	}
	ws, err := b.workloads(regroup)
	if err != nil {
		return err
	}
	desired := make(map[string]*Workload, len(ws))
	for i := range ws {
		w := &ws[i]
		if _, dup := desired[w.Key]; dup {
			return fmt.Errorf("two running workloads with key %s", w.Key)
		}
		if _, elsewhere := m.running[w.Key]; elsewhere && !before[w.Key] {
			return fmt.Errorf("two running workloads with key %s", w.Key) // also on a node not changed
		}
		desired[w.Key] = w
	}
	for _, h := range regroup { // the same rule as workloads: a disruptionMode=All gang or the pod
		h.key = "pod/" + string(h.pod.UID)
		if _, gang := desired["podgroup/"+h.group]; h.group != "" && gang {
			h.key = "podgroup/" + h.group
		}
	}

	// Finish first (what left or changed), then start: the new view is a valid allocation,
	// so its starts fit once everything stale is gone.
	var stale []*Workload
	for k := range before {
		cur, ok := m.running[k]
		if !ok {
			continue
		}
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
		delete(m.protectedNow, cur.Key)
		m.finishes++
	}
	for i := range ws { // in the builder's (sorted) order: ids are deterministic
		w := &ws[i]
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

	// The C cluster holds the view: remember what it was derived from.
	for n, st := range fresh {
		if old := m.nodes[n]; old != nil {
			for uid := range old.pods {
				if m.podNode[uid] == n {
					delete(m.podNode, uid)
				}
			}
		}
		if st == nil {
			delete(m.nodes, n)
			continue
		}
		m.nodes[n] = st
		for _, p := range in.Pods[n] {
			m.podNode[p.UID] = n
		}
	}
	for g := range touched {
		if len(members[g]) == 0 {
			delete(m.groups, g)
			continue
		}
		found, s, ok := groupStamp(b, g)
		m.groups[g] = &groupState{found: found, volatile: !ok, objectStamp: s, nodes: members[g]}
	}
	return nil
}

// sortedKeys are the set's members in order.
func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameWorkload says whether two workloads are the same to the C cluster (ids aside).
func sameWorkload(a, b *Workload) bool {
	if a.Name != b.Name || a.Priority != b.Priority || a.Preemptible != b.Preemptible || a.Replicas != b.Replicas ||
		a.WholeDevices != b.WholeDevices || a.ReplicaScope != b.ReplicaScope || a.GangScope != b.GangScope ||
		a.StartTime != b.StartTime || a.SinceCkpt != b.SinceCkpt || a.ModelID != b.ModelID ||
		a.ModelGiB != b.ModelGiB || a.Extra != b.Extra || a.Demand != b.Demand || len(a.Entries) != len(b.Entries) {
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
	plan       *Plan
	victims    []*Workload
	pdb        PDBOutcome
	ineligible map[string]string // the GPU nodes the preemptor may not use, with the reason
	reserved   int               // nominees whose rooms were reserved
	together   Together          // what planning with the other pending preemptors did
	synced     string            // what the sync did, for the log: "rebuilt, +starts -finishes, n nodes derived"
}

// block makes the C cluster hold a blocker on exactly the nodes of `ineligible`.
func (m *mirror) block(ineligible map[string]string) error {
	for _, n := range sortedNodes(m.blockers) {
		if reason, still := ineligible[n]; still && reason == m.blockers[n].reason {
			continue
		}
		if err := m.cl.finish(m.blockers[n].id, "blocker "+n); err != nil {
			return err
		}
		delete(m.blockers, n)
	}
	for _, n := range sortedNodes(ineligible) {
		if _, ok := m.blockers[n]; ok {
			continue
		}
		w := blocker(n, ineligible[n])
		m.nextID++
		w.ID = m.nextID
		if err := m.cl.start(&w); err != nil {
			return err
		}
		m.blockers[n] = blockerState{id: w.ID, reason: ineligible[n]}
	}
	return nil
}

// release finishes every reservation the last question started.
func (m *mirror) release() error {
	ids := make([]uint64, 0, len(m.reserved))
	for id := range m.reserved {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		if err := m.cl.finish(id, m.reserved[id]); err != nil {
			return err
		}
		delete(m.reserved, id)
	}
	return nil
}

// reserve starts the reservations `ws` (after release).
func (m *mirror) reserve(ws []Workload) error {
	for i := range ws {
		w := &ws[i]
		m.nextID++
		w.ID = m.nextID
		if err := m.cl.start(w); err != nil {
			return err
		}
		m.reserved[w.ID] = w.Name
	}
	return nil
}

// protect makes the C cluster hold exactly the workloads of `keys` as not preemptible (and
// every other running workload as the view has it: preemptible unless terminating),
// restarting only those that change.
func (m *mirror) protect(keys map[string]bool) error {
	restart := func(w *Workload, preemptible bool) error {
		if err := m.cl.finish(w.ID, w.Name); err != nil {
			return err
		}
		c := *w
		c.Preemptible = preemptible
		return m.cl.start(&c)
	}
	for _, k := range sortedKeys(m.protectedNow) {
		if keys[k] {
			continue
		}
		if w, ok := m.running[k]; ok {
			if err := restart(w, w.Preemptible); err != nil {
				return err
			}
		}
		delete(m.protectedNow, k)
	}
	for _, k := range sortedKeys(keys) {
		if m.protectedNow[k] {
			continue
		}
		w, ok := m.running[k]
		if !ok {
			continue
		}
		if err := restart(w, false); err != nil {
			return err
		}
		m.protectedNow[k] = true
	}
	return nil
}

// decide syncs the mirror to `in` and asks for a plan for the preemptor `pods` (one pod, or
// the unscheduled pods of `group`), alone.
func (m *mirror) decide(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) (*decision, error) {
	return m.decideWith(args, in, pods, group, nil)
}

// decideWith is decide with the other pending preemptors `others`, planned with it where that
// is cheaper (together.go).
func (m *mirror) decideWith(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup, others []PendingPreemptor) (*decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rebuilds, starts, finishes, derived := m.rebuilds, m.starts, m.finishes, m.derived
	if m.cl != nil {
		if err := m.release(); err != nil {
			m.reset()
			return nil, err
		}
	}
	self := selfUIDs(pods, group)
	if err := m.sync(args, in, append(append([]*corev1.Pod(nil), pods...), goneFor(in, self)...)); err != nil {
		return nil, err
	}
	synced := fmt.Sprintf("+%d -%d, %d nodes derived", m.starts-starts, m.finishes-finishes, m.derived-derived)
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
	d := &decision{synced: synced, ineligible: b.ineligible(pods)}
	own := make(map[string]string, len(d.ineligible))
	for n, why := range d.ineligible {
		own[n] = why
	}
	reserved, full := b.reservations(self, func(n string) []*heldPod {
		if st := m.nodes[n]; st != nil {
			return st.held
		}
		return nil
	}, d.ineligible)
	for n, why := range full {
		d.ineligible[n] = why
	}
	d.reserved = len(reserved)
	if err := m.block(d.ineligible); err != nil {
		m.reset() // a fresh cluster is the safe answer to a C error
		return nil, err
	}
	if err := m.reserve(reserved); err != nil {
		m.reset()
		return nil, err
	}
	protectedKeys := map[string]bool{}
	if len(in.PDBs) > 0 {
		for k, w := range m.running {
			if protected(in.PDBs, w.Pods) {
				protectedKeys[k] = true
			}
		}
	}
	var victims []*Workload
	plan, outcome, err := pdbFirst(in.PDBs, len(protectedKeys), func(allow bool) (*Plan, []*corev1.Pod, error) {
		keys := protectedKeys
		if allow {
			keys = nil
		}
		if err := m.protect(keys); err != nil {
			return nil, nil, err
		}
		plan, err := m.cl.plan(&pre, args)
		if err != nil {
			return nil, nil, err
		}
		if victims, err = m.workloadsOf(plan); err != nil {
			return nil, nil, err
		}
		var pods []*corev1.Pod
		for _, w := range victims {
			pods = append(pods, w.Pods...)
		}
		return plan, pods, nil
	})
	if err == nil && (plan.Status == "optimal" || plan.Status == "feasible") {
		var chosen *Plan
		chosen, d.together, err = m.together(args, in, &pre, pods, group, plan, outcome.Violations, own, others)
		if err == nil && chosen != plan {
			plan = chosen
			victims, err = m.workloadsOf(chosen)
		}
	}
	if err != nil {
		m.reset() // the cluster may be fine, but a fresh one is the safe answer to a C error
		return nil, err
	}
	d.plan, d.pdb, d.victims = plan, outcome, victims
	return d, nil
}
