// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"
)

// Standard DRA device attributes that place a device inside its node.
const (
	NUMAAttribute     = "resource.kubernetes.io/numaNode"
	PCIeRootAttribute = "resource.kubernetes.io/pcieRoot"
)

// Pod annotations read as cost inputs (docs/kubernetes.md, "Cost inputs").
const (
	// CostAnnotation is a plain price for evicting the pod (the cost model "extra").
	CostAnnotation = "topopreempt.dev/cost"
	// LastCheckpointAnnotation is the RFC 3339 time of the pod's last checkpoint (lost_work).
	LastCheckpointAnnotation = "topopreempt.dev/last-checkpoint"
	// ModelSizeAnnotation is the GiB of model weights the pod holds in GPU memory (reload_time).
	ModelSizeAnnotation = "topopreempt.dev/model-size-gib"
	// ModelIDAnnotation names that model (pods sharing a model are priced once by reload_time).
	ModelIDAnnotation = "topopreempt.dev/model-id"
)

// Fixed level names below the label levels: the host, then the device tree from DRA.
const (
	levelCluster = "cluster"
	levelNode    = "node"
	levelNUMA    = "numa"
	levelPCIe    = "pcie"
	levelDevice  = "device"
)

// Model is one preemption question in plain data: the topology (levels and domains), the
// running workloads with the exact devices they hold, and the preemptor. It is what the C ABI
// receives; building it touches no cgo, so it is tested on its own.
type Model struct {
	Levels    []string // root first; the host level is levelNode, the device level levelDevice
	Domains   []Domain // parents before children
	Workloads []Workload
	Preemptor Workload
}

// Domain is one domain of the topology by path ("zone-a/rack1/node-3/numa0/pci0/gpu3").
type Domain struct {
	Path, Level string
}

// Workload is a running pod (or a disruptionMode=All PodGroup) or the preemptor.
type Workload struct {
	ID           uint64
	Key          string // what identifies it across questions: "pod/<uid>" or "podgroup/<ns>/<name>"
	Name         string
	Priority     int32
	Preemptible  bool
	Replicas     int32
	WholeDevices int32
	ReplicaScope string // a level that each replica must lie inside, "" none
	GangScope    string // a level that all replicas must lie inside, "" none
	StartTime    float64
	SinceCkpt    float64
	ModelID      string
	ModelGiB     float64
	Extra        float64
	Entries      []Entry                     // running workloads: the devices held
	Pods         []*corev1.Pod               // the pods evicted with this workload, one per replica
	Claims       []*resourcev1.ResourceClaim // the allocated claims its pods hold
}

// Entry is one whole device held by a replica: the host (node name) and the path below it.
type Entry struct {
	Replica    uint32
	Host, Path string
}

// Inputs is the cluster state one question is asked against (from the scheduler's snapshot).
type Inputs struct {
	Nodes  []*corev1.Node
	Pods   map[string][]*corev1.Pod // by node name: the pods the scheduler counts on it
	Slices []*resourcev1.ResourceSlice
	Claims []*resourcev1.ResourceClaim
	// PodGroup looks a PodGroup up (nil: not found); nil means no PodGroups.
	PodGroup func(namespace, name string) *schedulingv1beta1.PodGroup
	Now      time.Time
}

// Unsupported marks a question the model cannot express: the plugin falls back to stock.
type Unsupported struct{ Reason string }

func (u *Unsupported) Error() string { return "not expressible: " + u.Reason }

func unsupported(format string, args ...any) error {
	return &Unsupported{Reason: fmt.Sprintf(format, args...)}
}

type deviceKey struct{ driver, pool, device string }

// objectKey names a namespaced object without building a string per lookup.
type objectKey struct{ namespace, name string }

// builder assembles a Model; devices maps each DRA device to its host and path.
type builder struct {
	args     *Args
	in       *Inputs
	m        Model
	devices  map[deviceKey]Entry
	claims   map[objectKey]*resourcev1.ResourceClaim
	nodeDevs map[string][]string // extended-resource devices per node, in order
	levelOf  map[string]string   // label key -> level name
	// extMode: the preemptor asks for the extended resource, so the GPUs modelled are the
	// extended-resource ones; otherwise they are the DRA devices. One kind per question, since
	// a device leaf carries no kind and the two inventories are separate to the scheduler.
	extMode bool
}

// BuildModel turns the scheduler's view into a Model for preemptor `pods` (one pod, or the
// pods of one PodGroup). Errors name the offending object; *Unsupported means "fall back".
func BuildModel(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) (*Model, error) {
	if len(pods) == 0 {
		return nil, fmt.Errorf("no preemptor pod")
	}
	b := &builder{args: args, in: in, devices: map[deviceKey]Entry{}, nodeDevs: map[string][]string{}, levelOf: map[string]string{}}
	b.indexClaims()
	b.extMode = wantsExtended(args, pods[0])
	if err := b.topology(); err != nil {
		return nil, err
	}
	if err := b.preemptor(pods, group); err != nil {
		return nil, err
	}
	if err := b.running(pods); err != nil {
		return nil, err
	}
	return &b.m, nil
}

// wantsExtended says whether the question is about the extended resource (the preemptor asks
// for it) rather than DRA devices.
func wantsExtended(args *Args, preemptor *corev1.Pod) bool {
	return args.ExtendedResource != "" && extRequest(preemptor, args.ExtendedResource) > 0
}

func (b *builder) indexClaims() {
	b.claims = make(map[objectKey]*resourcev1.ResourceClaim, len(b.in.Claims))
	for _, c := range b.in.Claims {
		b.claims[objectKey{c.Namespace, c.Name}] = c
	}
}

// labelLevels are the configured label keys above the host, with unique level names.
func (b *builder) labelLevels() []string {
	var keys []string
	for _, k := range b.args.TopologyKeys {
		if k == corev1.LabelHostname {
			continue // the host level is the node itself
		}
		keys = append(keys, k)
	}
	return keys
}

func (b *builder) topology() error {
	keys := b.labelLevels()
	b.m.Levels = []string{levelCluster}
	for i, k := range keys {
		name := k[strings.LastIndex(k, "/")+1:]
		for _, used := range b.m.Levels {
			if used == name {
				name = fmt.Sprintf("%s-%d", name, i)
			}
		}
		b.levelOf[k] = name
		b.m.Levels = append(b.m.Levels, name)
	}
	b.m.Levels = append(b.m.Levels, levelNode, levelNUMA, levelPCIe, levelDevice)

	slicesByNode := map[string][]*resourcev1.ResourceSlice{}
	for _, s := range b.in.Slices {
		if s.Spec.NodeName == nil || !b.args.driverWanted(s.Spec.Driver) {
			continue // network-attached or another driver's devices: not GPUs of a node
		}
		slicesByNode[*s.Spec.NodeName] = append(slicesByNode[*s.Spec.NodeName], s)
	}
	nodes := append([]*corev1.Node(nil), b.in.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	seen := map[string]bool{}
	for _, n := range nodes {
		path := ""
		for _, k := range keys {
			v, ok := n.Labels[k]
			if !ok || v == "" {
				return unsupported("node %s has no label %s (a configured topology key)", n.Name, k)
			}
			path = join(path, v)
			if !seen[path] {
				seen[path] = true
				b.m.Domains = append(b.m.Domains, Domain{Path: path, Level: b.levelOf[k]})
			}
		}
		host := join(path, n.Name)
		b.m.Domains = append(b.m.Domains, Domain{Path: host, Level: levelNode})
		if err := b.nodeDevices(n, host, slicesByNode[n.Name]); err != nil {
			return err
		}
	}
	return nil
}

// nodeDevices adds the device tree of one node: DRA devices under numaNode > pcieRoot, or,
// with no ResourceSlice, the extended resource's count as devices of unknown placement.
func (b *builder) nodeDevices(n *corev1.Node, host string, slices []*resourcev1.ResourceSlice) error {
	added := map[string]bool{}
	add := func(path, level string) {
		if !added[path] {
			added[path] = true
			b.m.Domains = append(b.m.Domains, Domain{Path: join(host, path), Level: level})
		}
	}
	if b.extMode {
		q, ok := n.Status.Allocatable[corev1.ResourceName(b.args.ExtendedResource)]
		if !ok || q.Value() == 0 {
			return nil
		}
		// A device plugin tells the scheduler nothing about NUMA or PCIe: one unknown domain each.
		add("numa-unknown", levelNUMA)
		add("numa-unknown/pcie-unknown", levelPCIe)
		for i := int64(0); i < q.Value(); i++ {
			p := fmt.Sprintf("numa-unknown/pcie-unknown/dev%d", i)
			add(p, levelDevice)
			b.nodeDevs[n.Name] = append(b.nodeDevs[n.Name], p)
		}
		return nil
	}
	sort.Slice(slices, func(i, j int) bool { return slices[i].Name < slices[j].Name })
	for _, s := range slices {
		for _, d := range s.Spec.Devices {
			numa, pcie := "numa-unknown-"+d.Name, "pcie-unknown-"+d.Name
			if a, ok := d.Attributes[NUMAAttribute]; ok {
				v, err := attrString(a)
				if err != nil {
					return fmt.Errorf("ResourceSlice %s device %s: %s: %w", s.Name, d.Name, NUMAAttribute, err)
				}
				numa = "numa" + v
			}
			if a, ok := d.Attributes[PCIeRootAttribute]; ok {
				v, err := attrString(a)
				if err != nil {
					return fmt.Errorf("ResourceSlice %s device %s: %s: %w", s.Name, d.Name, PCIeRootAttribute, err)
				}
				pcie = v
			}
			if strings.Contains(numa+pcie+d.Name, "/") {
				return unsupported("ResourceSlice %s device %s: a '/' in a device or attribute name", s.Name, d.Name)
			}
			add(numa, levelNUMA)
			add(numa+"/"+pcie, levelPCIe)
			p := numa + "/" + pcie + "/" + d.Name
			if added[p] {
				return unsupported("node %s: device %s published twice", n.Name, d.Name)
			}
			add(p, levelDevice)
			b.devices[deviceKey{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = Entry{Host: n.Name, Path: p}
		}
	}
	return nil
}

func attrString(a resourcev1.DeviceAttribute) (string, error) {
	switch {
	case a.IntValue != nil:
		return strconv.FormatInt(*a.IntValue, 10), nil
	case a.StringValue != nil:
		return *a.StringValue, nil
	case a.VersionValue != nil:
		return *a.VersionValue, nil
	case a.BoolValue != nil:
		return strconv.FormatBool(*a.BoolValue), nil
	}
	return "", fmt.Errorf("attribute has no value")
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// podClaims are the ResourceClaims a pod uses (direct ones and those made from templates).
func (b *builder) podClaims(p *corev1.Pod) ([]*resourcev1.ResourceClaim, error) {
	var out []*resourcev1.ResourceClaim
	for _, rc := range p.Spec.ResourceClaims {
		name := ""
		if rc.ResourceClaimName != nil {
			name = *rc.ResourceClaimName
		} else {
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.Name == rc.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		if name == "" {
			return nil, unsupported("pod %s/%s: claim %s has no ResourceClaim yet", p.Namespace, p.Name, rc.Name)
		}
		c, ok := b.claims[objectKey{p.Namespace, name}]
		if !ok {
			return nil, unsupported("pod %s/%s: ResourceClaim %s not found", p.Namespace, p.Name, name)
		}
		out = append(out, c)
	}
	return out, nil
}

// demand reads what one preemptor pod asks for: whole devices and the NUMA/PCIe scope.
func (b *builder) demand(p *corev1.Pod) (devices int32, scope string, err error) {
	claims, err := b.podClaims(p)
	if err != nil {
		return 0, "", err
	}
	ext := int64(0)
	if b.args.ExtendedResource != "" {
		ext = extRequest(p, b.args.ExtendedResource)
	}
	if ext > 0 && len(claims) > 0 {
		return 0, "", unsupported("pod %s/%s asks for GPUs both through DRA and %s", p.Namespace, p.Name, b.args.ExtendedResource)
	}
	if b.extMode != (ext > 0) {
		return 0, "", unsupported("pod %s/%s: the pods of a gang ask for GPUs in different ways", p.Namespace, p.Name)
	}
	if ext > 0 {
		return int32(ext), "", nil
	}
	if len(claims) > 1 {
		return 0, "", unsupported("pod %s/%s has %d ResourceClaims (one is supported)", p.Namespace, p.Name, len(claims))
	}
	for _, c := range claims {
		if c.Status.Allocation != nil {
			return 0, "", unsupported("pod %s/%s: ResourceClaim %s is already allocated (shared claim)", p.Namespace, p.Name, c.Name)
		}
		for _, r := range c.Spec.Devices.Requests {
			e := r.Exactly
			if e == nil || e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || len(e.Selectors) > 0 ||
				e.AdminAccess != nil && *e.AdminAccess {
				return 0, "", unsupported("ResourceClaim %s/%s request %s: only exactly.count of a device class is modelled", c.Namespace, c.Name, r.Name)
			}
			devices += int32(e.Count)
		}
		for _, con := range c.Spec.Devices.Constraints {
			if con.MatchAttribute == nil {
				return 0, "", unsupported("ResourceClaim %s/%s: a constraint other than matchAttribute", c.Namespace, c.Name)
			}
			switch string(*con.MatchAttribute) {
			case NUMAAttribute:
				scope = tighter(scope, levelNUMA)
			case PCIeRootAttribute:
				scope = tighter(scope, levelPCIe)
			default:
				return 0, "", unsupported("ResourceClaim %s/%s: matchAttribute %s is not a topology attribute", c.Namespace, c.Name, *con.MatchAttribute)
			}
		}
	}
	return devices, scope, nil
}

// extRequest is what a pod requests of an extended resource, over its containers.
func extRequest(p *corev1.Pod, name string) int64 {
	n := int64(0)
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[corev1.ResourceName(name)]; ok {
			n += q.Value()
		}
	}
	return n
}

func tighter(a, b string) string {
	if a == levelPCIe || b == levelPCIe {
		return levelPCIe
	}
	if a == levelNUMA || b == levelNUMA {
		return levelNUMA
	}
	return ""
}

func (b *builder) preemptor(pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) error {
	if len(pods) == 0 {
		return fmt.Errorf("no preemptor pod")
	}
	w := Workload{Name: pods[0].Namespace + "/" + pods[0].Name, Priority: podPriority(pods[0]), Replicas: int32(len(pods)), Pods: pods}
	for i, p := range pods {
		d, scope, err := b.demand(p)
		if err != nil {
			return err
		}
		if i > 0 && (d != w.WholeDevices || scope != w.ReplicaScope) {
			return unsupported("PodGroup %s: pods %s and %s ask for different devices (one replica shape is modelled)", group.Name, pods[0].Name, p.Name)
		}
		w.WholeDevices, w.ReplicaScope = d, scope
	}
	if w.WholeDevices == 0 {
		return unsupported("pod %s asks for no GPU: nothing for topopreempt to place", w.Name)
	}
	if group != nil {
		w.Name = "podgroup " + group.Namespace + "/" + group.Name
		if g := group.Spec.SchedulingConstraints; g != nil {
			for _, t := range g.Topology {
				if t.Key == corev1.LabelHostname {
					w.GangScope = levelNode
				} else if l, ok := b.levelOf[t.Key]; ok {
					w.GangScope = l
				} else {
					return unsupported("PodGroup %s/%s: topology key %s is not a configured topologyKey", group.Namespace, group.Name, t.Key)
				}
			}
		}
	}
	b.m.Preemptor = w
	return nil
}

func (b *builder) podGroup(namespace, name string) *schedulingv1beta1.PodGroup {
	if b.in.PodGroup == nil {
		return nil
	}
	return b.in.PodGroup(namespace, name)
}

func podPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// running turns every pod holding devices into a workload (a disruptionMode=All PodGroup's
// pods into one gang workload), with its exact devices and cost inputs.
func (b *builder) running(preemptors []*corev1.Pod) error {
	skip := podUIDs(preemptors)
	nodeNames := make([]string, 0, len(b.in.Pods))
	for n := range b.in.Pods {
		nodeNames = append(nodeNames, n)
	}
	sort.Strings(nodeNames)
	var all []*heldPod
	for _, n := range nodeNames {
		held, _, err := b.nodeHeld(n, skip)
		if err != nil {
			return err
		}
		all = append(all, held...)
	}
	ws, err := b.workloads(all)
	if err != nil {
		return err
	}
	b.m.Workloads = ws
	b.m.Preemptor.ID = uint64(len(b.m.Workloads) + 1)
	return nil
}

// podUIDs is the set of the pods' UIDs.
func podUIDs(pods []*corev1.Pod) map[types.UID]bool {
	set := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		set[p.UID] = true
	}
	return set
}

// heldPod is one running pod holding devices: what the model derives from it alone (its node's
// topology aside), so that a mirror can keep it while its node does not change.
type heldPod struct {
	pod     *corev1.Pod
	entries []Entry
	claims  []*resourcev1.ResourceClaim
	cost    Workload // costInputs: the cost fields only
	group   string   // "<namespace>/<PodGroup name>" the pod names, "" none
	key     string   // the workload key it went into at the mirror's last sync
}

// nodeHeld derives node n's pods that hold devices, in the builder's order (namespace, name),
// the pods in `skip` excepted; skipped says whether one was on the node.
func (b *builder) nodeHeld(n string, skip map[types.UID]bool) (held []*heldPod, skipped bool, err error) {
	pods := append([]*corev1.Pod(nil), b.in.Pods[n]...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	timed := b.args.usesLostWork()
	nextExt := 0
	for _, p := range pods {
		if skip[p.UID] {
			skipped = true
			continue
		}
		var entries []Entry
		var held1 []*resourcev1.ResourceClaim
		claims, err := b.podClaims(p)
		if err != nil {
			return nil, false, err
		}
		for _, c := range claims {
			if b.extMode {
				break
			}
			if c.Status.Allocation == nil {
				return nil, false, unsupported("bound pod %s/%s: ResourceClaim %s not allocated", p.Namespace, p.Name, c.Name)
			}
			if len(c.Status.ReservedFor) > 1 {
				return nil, false, unsupported("ResourceClaim %s/%s is shared by %d pods", c.Namespace, c.Name, len(c.Status.ReservedFor))
			}
			for _, r := range c.Status.Allocation.Devices.Results {
				if !b.args.driverWanted(r.Driver) {
					continue
				}
				e, ok := b.devices[deviceKey{r.Driver, r.Pool, r.Device}]
				if !ok {
					return nil, false, unsupported("ResourceClaim %s/%s holds device %s/%s/%s that no ResourceSlice publishes", c.Namespace, c.Name, r.Driver, r.Pool, r.Device)
				}
				entries = append(entries, e)
			}
			held1 = append(held1, c)
		}
		if b.extMode {
			for k := int64(0); k < extRequest(p, b.args.ExtendedResource); k++ {
				if nextExt >= len(b.nodeDevs[n]) {
					return nil, false, unsupported("node %s: pods request more %s than it has", n, b.args.ExtendedResource)
				}
				// Which device a device plugin gave is invisible here; any assignment is
				// equivalent because all devices of the node share one unknown domain.
				entries = append(entries, Entry{Host: n, Path: b.nodeDevs[n][nextExt]})
				nextExt++
			}
		}
		if len(entries) == 0 {
			continue
		}
		cost, err := costInputs(p, b.in.Now, timed)
		if err != nil {
			return nil, false, err
		}
		h := &heldPod{pod: p, entries: entries, claims: held1, cost: cost}
		if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
			h.group = p.Namespace + "/" + *sg.PodGroupName
		}
		held = append(held, h)
	}
	return held, skipped, nil
}

// workloads groups held pods (in the builder's order, every member of each PodGroup they name
// included) into workloads with ids from 1: a pod alone, or the pods of a disruptionMode=All
// PodGroup as one gang. Each held pod's key is left for the caller to record.
func (b *builder) workloads(all []*heldPod) ([]Workload, error) {
	gangs := map[string]int{}           // PodGroup key -> index in the result
	ws := make([]Workload, 0, len(all)) // 10,000 appends of a large struct add up
	for _, h := range all {
		p := h.pod
		prio := podPriority(p)
		workloadKey := "pod/" + string(p.UID)
		if h.group != "" {
			if g := b.podGroup(p.Namespace, *p.Spec.SchedulingGroup.PodGroupName); g != nil && g.Spec.DisruptionMode != nil && g.Spec.DisruptionMode.All != nil {
				if i, ok := gangs[h.group]; ok {
					w := &ws[i]
					if int32(len(h.entries)) != w.WholeDevices {
						return nil, unsupported("PodGroup %s: members hold different numbers of devices", h.group)
					}
					for _, e := range h.entries {
						e.Replica = uint32(w.Replicas)
						w.Entries = append(w.Entries, e)
					}
					w.Replicas++
					w.Pods = append(w.Pods, p)
					w.Claims = append(w.Claims, h.claims...)
					w.Extra += h.cost.Extra
					w.SinceCkpt = max(w.SinceCkpt, h.cost.SinceCkpt)
					w.Priority = max(w.Priority, prio)
					continue
				}
				gangs[h.group] = len(ws)
				workloadKey = "podgroup/" + h.group
			}
		}
		w := h.cost
		w.ID = uint64(len(ws) + 1)
		w.Key = workloadKey
		w.Name = p.Namespace + "/" + p.Name
		w.Priority = prio
		// Every running pod may be a victim as far as the model goes: the library itself takes
		// only strictly lower priorities than the preemptor's, so the workload does not depend
		// on the question and a mirror can keep it across questions.
		w.Preemptible = true
		w.Replicas = 1
		w.WholeDevices = int32(len(h.entries))
		// A copy: a gang appends its members' entries, and h.entries stays the node's.
		w.Entries = append([]Entry(nil), h.entries...)
		w.Pods = []*corev1.Pod{p}
		w.Claims = append([]*resourcev1.ResourceClaim(nil), h.claims...)
		ws = append(ws, w)
	}
	return ws, nil
}

// costInputs reads a pod's cost annotations; a malformed one is an error naming the pod.
// The seconds since the last checkpoint are read only when `timed` (a lost_work cost term
// prices them): they change with the clock, so every question would see every pod changed.
func costInputs(p *corev1.Pod, now time.Time, timed bool) (Workload, error) {
	var w Workload
	bad := func(key string, err error) error {
		return fmt.Errorf("pod %s/%s: annotation %s: %w", p.Namespace, p.Name, key, err)
	}
	if p.Status.StartTime != nil {
		w.StartTime = float64(p.Status.StartTime.Unix())
	} else {
		w.StartTime = float64(p.CreationTimestamp.Unix())
	}
	w.StartTime = max(w.StartTime, 0)
	if v, ok := p.Annotations[CostAnnotation]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f {
			return w, bad(CostAnnotation, fmt.Errorf("want a finite number >= 0, got %q", v))
		}
		w.Extra = f
	}
	if v, ok := p.Annotations[LastCheckpointAnnotation]; ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return w, bad(LastCheckpointAnnotation, err)
		}
		if timed {
			w.SinceCkpt = max(now.Sub(t).Seconds(), 0)
		}
	} else if timed && p.Status.StartTime != nil {
		w.SinceCkpt = max(now.Sub(p.Status.StartTime.Time).Seconds(), 0) // never checkpointed
	}
	if v, ok := p.Annotations[ModelSizeAnnotation]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f != f {
			return w, bad(ModelSizeAnnotation, fmt.Errorf("want a finite number >= 0, got %q", v))
		}
		w.ModelGiB = f
	}
	w.ModelID = p.Annotations[ModelIDAnnotation]
	return w, nil
}
