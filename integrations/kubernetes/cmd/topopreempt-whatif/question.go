// SPDX-License-Identifier: MIT

package main

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	topopreempt "github.com/topopreempt/topopreempt/integrations/kubernetes/plugin"
)

// question is one what-if: the cluster state as the scheduler would see it and the preemptor.
type question struct {
	in       *topopreempt.Inputs
	pods     []*corev1.Pod // the preemptor: one pod, or the pods of a PodGroup
	group    *schedulingv1beta1.PodGroup
	warnings []string
}

// preemptorSpec says where the preemptor comes from: a pending pod or PodGroup of the cluster
// dump, or a manifest (file contents already parsed).
type preemptorSpec struct {
	pod, podGroup string   // "namespace/name"
	manifest      *objects // Pods, at most one PodGroup, ResourceClaims, ResourceClaimTemplates
	manifestName  string
}

// newQuestion builds the scheduler's view from a cluster dump the way the plugin's inputs()
// reads its snapshot: every node, the non-terminal pods bound to a known node, the pending
// pods nominated to a known node, every ResourceSlice and ResourceClaim, the
// PodDisruptionBudgets, and the PodGroups by name.
func newQuestion(cluster *objects, spec *preemptorSpec, now time.Time) (*question, error) {
	q := &question{in: &topopreempt.Inputs{Pods: map[string][]*corev1.Pod{}, Now: now}}
	q.warnings = cluster.missing()
	known := map[string]bool{}
	for _, n := range cluster.Nodes {
		if known[n.Name] {
			return nil, bad("Node %s: listed twice", n.Name)
		}
		known[n.Name] = true
	}
	q.in.Nodes = cluster.Nodes
	q.in.Slices = cluster.Slices
	q.in.Claims = append(q.in.Claims, cluster.Claims...)
	groups := map[[2]string]*schedulingv1beta1.PodGroup{}
	addGroups := func(gs []*schedulingv1beta1.PodGroup) {
		for _, g := range gs {
			groups[[2]string{g.Namespace, g.Name}] = g
		}
	}
	addGroups(cluster.Groups)
	q.in.PDBs = cluster.PDBs
	q.in.PodGroup = func(ns, name string) *schedulingv1beta1.PodGroup { return groups[[2]string{ns, name}] }

	offNode := 0
	for _, p := range cluster.Pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // the scheduler's cache holds bound, non-terminal pods only
		}
		if !known[p.Spec.NodeName] {
			offNode++
			continue
		}
		q.in.Pods[p.Spec.NodeName] = append(q.in.Pods[p.Spec.NodeName], p)
	}
	if offNode > 0 {
		q.warnings = append(q.warnings, fmt.Sprintf("%d bound pods on nodes not in the input were left out", offNode))
	}
	// The scheduler's nominator: pending pods with status.nominatedNodeName (those of at least
	// the preemptor's priority hold their rooms, as in the plugin; see reserve.go). The
	// plugin's own preemptions in flight are its memory, not in a dump: their preemptors carry
	// the same nominatedNodeName once PostFilter has returned.
	for _, p := range cluster.Pods {
		if n := p.Status.NominatedNodeName; p.Spec.NodeName == "" && n != "" && known[n] && p.DeletionTimestamp == nil {
			q.in.Nominated = append(q.in.Nominated, topopreempt.Nominee{Pod: p, Node: n})
		}
	}

	templates := cluster.Templates
	switch {
	case spec.manifest != nil:
		m := spec.manifest
		if len(m.Pods) == 0 {
			return nil, bad("%s: no Pod (the preemptor) in the manifest", spec.manifestName)
		}
		if len(m.Groups) > 1 {
			return nil, bad("%s: %d PodGroups (one preemptor at a time)", spec.manifestName, len(m.Groups))
		}
		if len(m.Groups) == 0 && len(m.Pods) > 1 {
			return nil, bad("%s: %d Pods and no PodGroup (one pod, or the pods of one PodGroup)", spec.manifestName, len(m.Pods))
		}
		for _, p := range m.Pods {
			if p.UID == "" { // the plugin tells the preemptor from running pods by UID
				p.UID = types.UID("whatif/" + p.Namespace + "/" + p.Name)
			}
			if p.Spec.NodeName != "" {
				return nil, bad("%s: Pod %s/%s: spec.nodeName is set; the preemptor is a pending pod", spec.manifestName, p.Namespace, p.Name)
			}
		}
		q.in.Claims = append(q.in.Claims, m.Claims...)
		templates = append(templates, m.Templates...)
		q.pods = m.Pods
		if len(m.Groups) == 1 {
			q.group = m.Groups[0]
			addGroups(m.Groups)
		}
	case spec.pod != "":
		ns, name := splitName(spec.pod)
		p := findPod(cluster.Pods, ns, name)
		if p == nil {
			return nil, bad("Pod %s/%s: not in the input", ns, name)
		}
		if p.Spec.NodeName != "" {
			return nil, bad("Pod %s/%s: spec.nodeName is %s; the preemptor must be a pending pod", ns, name, p.Spec.NodeName)
		}
		q.pods = []*corev1.Pod{p}
		if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && groups[[2]string{ns, *sg.PodGroupName}] != nil {
			q.warnings = append(q.warnings, fmt.Sprintf("Pod %s/%s belongs to PodGroup %s/%s, which kube-scheduler preempts for as a whole: see --podgroup %s/%s",
				ns, name, ns, *sg.PodGroupName, ns, *sg.PodGroupName))
		}
	case spec.podGroup != "":
		ns, name := splitName(spec.podGroup)
		g := groups[[2]string{ns, name}]
		if g == nil {
			return nil, bad("PodGroup %s/%s: not in the input", ns, name)
		}
		q.group = g
		for _, p := range cluster.Pods {
			if p.Namespace == ns && p.Spec.NodeName == "" && p.Spec.SchedulingGroup != nil &&
				p.Spec.SchedulingGroup.PodGroupName != nil && *p.Spec.SchedulingGroup.PodGroupName == name {
				q.pods = append(q.pods, p)
			}
		}
		if len(q.pods) == 0 {
			return nil, bad("PodGroup %s/%s: no pending pod names it in spec.schedulingGroup.podGroupName", ns, name)
		}
		sort.Slice(q.pods, func(i, j int) bool { return q.pods[i].Name < q.pods[j].Name })
	default:
		return nil, bad("no preemptor: give --pod, --podgroup or --preemptor")
	}
	claims, err := claimsFromTemplates(q.pods, q.in.Claims, templates)
	if err != nil {
		return nil, err
	}
	q.in.Claims = append(q.in.Claims, claims...)
	return q, nil
}

func namespaceOf(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func findPod(pods []*corev1.Pod, ns, name string) *corev1.Pod {
	for _, p := range pods {
		if p.Namespace == ns && p.Name == name {
			return p
		}
	}
	return nil
}

// claimsFromTemplates makes, for each preemptor claim that names a ResourceClaimTemplate and
// has no ResourceClaim yet, the claim the controller would make from it ("<pod>-<claim>"), and
// records it in the pod's status as the controller does, so that the model reads its request.
// The pods are copies afterwards where changed; the input objects are left alone.
func claimsFromTemplates(pods []*corev1.Pod, existing []*resourcev1.ResourceClaim, templates []*resourcev1.ResourceClaimTemplate) ([]*resourcev1.ResourceClaim, error) {
	have := map[[2]string]bool{}
	for _, c := range existing {
		have[[2]string{c.Namespace, c.Name}] = true
	}
	tmpl := map[[2]string]*resourcev1.ResourceClaimTemplate{}
	for _, t := range templates {
		tmpl[[2]string{t.Namespace, t.Name}] = t
	}
	var out []*resourcev1.ResourceClaim
	for i, p := range pods {
		for _, rc := range p.Spec.ResourceClaims {
			if rc.ResourceClaimTemplateName == nil || generatedClaim(p, rc.Name) != "" {
				continue
			}
			t := tmpl[[2]string{p.Namespace, *rc.ResourceClaimTemplateName}]
			if t == nil {
				return nil, bad("Pod %s/%s: spec.resourceClaims[%s].resourceClaimTemplateName %s: no such ResourceClaimTemplate in the input and no ResourceClaim made from it yet (add the template to the preemptor manifest)",
					p.Namespace, p.Name, rc.Name, *rc.ResourceClaimTemplateName)
			}
			name := p.Name + "-" + rc.Name
			if have[[2]string{p.Namespace, name}] {
				return nil, bad("Pod %s/%s: the claim %s made from template %s would clash with an existing ResourceClaim", p.Namespace, p.Name, name, t.Name)
			}
			out = append(out, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: name}, Spec: *t.Spec.Spec.DeepCopy()})
			cp := p.DeepCopy()
			cp.Status.ResourceClaimStatuses = append(cp.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: rc.Name, ResourceClaimName: &name})
			pods[i], p = cp, cp
		}
	}
	return out, nil
}

// generatedClaim is the ResourceClaim made for a pod's template claim, "" none yet.
func generatedClaim(p *corev1.Pod, claim string) string {
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.Name == claim && st.ResourceClaimName != nil {
			return *st.ResourceClaimName
		}
	}
	return ""
}
