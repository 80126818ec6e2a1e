// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodDisruptionBudgets come first (docs/kubernetes.md, "PodDisruptionBudgets"): a plan never
// violates more PDBs than the plan that violates fewest, and among those it is the cheapest by
// the cost model. The order is exact without any weight: the question is solved first with
// every Protected workload (one whose eviction alone violates a PDB) kept out of the victims.
// Every plan that violates no PDB is a plan of that pass, so if its optimum violates none, it
// is the cheapest plan with no violation. If that pass is infeasible, no plan avoids a
// violation, and the question is solved again with them allowed: if that optimum violates
// exactly one PDB it is the cheapest plan with the fewest violations. In every other case (the
// first pass's optimum still violates a PDB by taking more pods than a budget allows, or the
// second one violates two or more) fewer violations are not proven, and the plugin falls back
// to DefaultPreemption, which counts them itself.

// pdbMatches says whether pdb counts pod as DefaultPreemption does: same namespace, a valid
// non-empty selector that matches the pod's labels, and the pod not already among the PDB's
// disrupted pods.
func pdbMatches(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if pdb.Namespace != pod.Namespace || len(pod.Labels) == 0 {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
		return false
	}
	_, disrupted := pdb.Status.DisruptedPods[pod.Name]
	return !disrupted
}

// protected says whether evicting these pods alone violates a PDB: one of them is matched by a
// PDB that allows no disruption.
func protected(pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) bool {
	for _, p := range pods {
		for _, pdb := range pdbs {
			if pdb.Status.DisruptionsAllowed <= 0 && pdbMatches(pdb, p) {
				return true
			}
		}
	}
	return false
}

// PDBViolations counts the victims' PDB violations exactly as DefaultPreemption does
// (preemption.FilterVictimsWithPDBViolation): each PDB's DisruptionsAllowed is spent pod by
// pod, in the victims' order, and a pod that finds a budget exhausted is one violation.
func PDBViolations(pdbs []*policyv1.PodDisruptionBudget, victims []*corev1.Pod) int {
	allowed := make([]int32, len(pdbs))
	for i, pdb := range pdbs {
		allowed[i] = pdb.Status.DisruptionsAllowed
	}
	count := 0
	for _, p := range victims {
		for i, pdb := range pdbs {
			if !pdbMatches(pdb, p) {
				continue
			}
			allowed[i]--
			if allowed[i] < 0 {
				count++
				break
			}
		}
	}
	return count
}

// PDBOutcome is how a plan stands against the PodDisruptionBudgets.
type PDBOutcome struct {
	Violations int    // the plan's violations, counted as DefaultPreemption counts them
	Proven     bool   // no plan violates fewer (see the order above)
	Pass       string // "protected kept" (first pass) or "protected allowed" (second)
	Protected  int    // running workloads whose eviction alone violates a PDB
}

func (o PDBOutcome) String() string {
	proof := "fewest proven"
	if !o.Proven {
		proof = "fewer NOT proven"
	}
	return fmt.Sprintf("%d PDB violation(s), %s (%s; %d protected workload(s))", o.Violations, proof, o.Pass, o.Protected)
}

// pdbFirst runs the PDB-first order over `solve` (allow: whether protected workloads may be
// victims), which returns the plan and its victims' pods.
func pdbFirst(pdbs []*policyv1.PodDisruptionBudget, protectedCount int, solve func(allow bool) (*Plan, []*corev1.Pod, error)) (*Plan, PDBOutcome, error) {
	out := PDBOutcome{Pass: "protected kept", Protected: protectedCount}
	plan, victims, err := solve(false)
	if err != nil {
		return nil, out, err
	}
	if plan.Status != "infeasible" || protectedCount == 0 {
		out.Violations = PDBViolations(pdbs, victims)
		out.Proven = out.Violations == 0
		return plan, out, nil
	}
	out.Pass = "protected allowed"
	plan, victims, err = solve(true)
	if err != nil {
		return nil, out, err
	}
	out.Violations = PDBViolations(pdbs, victims)
	// The first pass proved that every plan violates at least one PDB.
	out.Proven = plan.Status == "infeasible" || out.Violations == 1
	return plan, out, nil
}
