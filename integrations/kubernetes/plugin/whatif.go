// SPDX-License-Identifier: MIT

package topopreempt

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// DecideAsPlugin asks one question exactly the way PostFilter does: through a fresh mirror
// (the persistent C-ABI cluster, synced from `in`) of the preemptor's GPU kind, with the
// default solver. It returns the plan and the victim workloads. The what-if tool's tests use
// it to check that the tool (BuildModel, then SolveWith on a fresh cluster) answers what the
// plugin would.
func DecideAsPlugin(args *Args, in *Inputs, pods []*corev1.Pod, group *schedulingv1beta1.PodGroup) (*Plan, []*Workload, PDBOutcome, error) {
	if len(pods) == 0 {
		return nil, nil, PDBOutcome{}, fmt.Errorf("no preemptor pod")
	}
	m := newMirror(wantsExtended(args, pods[0]))
	defer m.close()
	d, err := m.decide(args, in, pods, group)
	if err != nil {
		return nil, nil, PDBOutcome{}, err
	}
	return d.plan, d.victims, d.pdb, nil
}
