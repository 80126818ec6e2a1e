// SPDX-License-Identifier: MIT
// The model: resources, topologies and their builder, machine shapes, workloads, placements,
// the cluster state, placement search and the synthetic cluster generator.

#include <nanobind/eigen/dense.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "common.hpp"
#include "topopreempt/model/cluster_generator.hpp"
#include "topopreempt/model/machine_shapes.hpp"
#include "topopreempt/model/placement_search.hpp"

namespace topopreempt::python {

namespace {

using TopologyPtr = std::shared_ptr<Topology>;

/// Topologies are immutable and shared with every state over them; Python holds them through
/// the same shared pointer.
TopologyPtr share(Topology topology) { return std::make_shared<Topology>(std::move(topology)); }

TopologyPtr share(const std::shared_ptr<const Topology>& topology) {
  return std::const_pointer_cast<Topology>(topology);
}

/// A resource vector from a `{name: amount}` mapping over `schema`: unknown names, names given
/// twice and negative amounts are errors, as `ResourceSchema::make` says.
ResourceVector vector_from_mapping(const ResourceSchema& schema,
                                   const std::map<std::string, Amount>& amounts) {
  ResourceVector result = schema.zeros();
  for (const auto& [name, amount] : amounts) {
    const std::size_t index = schema.index_of(name);
    if (amount < 0) {
      throw std::invalid_argument("resource '" + name + "' has a negative amount " +
                                  std::to_string(amount));
    }
    result(static_cast<Eigen::Index>(index)) = amount;
  }
  return result;
}

std::vector<std::uint32_t> ids_of(std::span<const DomainId> domains) {
  std::vector<std::uint32_t> ids;
  ids.reserve(domains.size());
  for (DomainId d : domains) ids.push_back(d.value);
  return ids;
}

void bind_resources(nb::module_& m) {
  nb::enum_<ResourceKind>(m, "ResourceKind", "Where a dimension's capacity lives.")
      .value("device", ResourceKind::device,
             "On device leaves (a GPU's milli-share or memory); whole-device replicas take every "
             "device dimension of each device they get.")
      .value("pooled", ResourceKind::pooled,
             "On inner domains (CPU and memory of a NUMA node), drawn from pools inside the "
             "domain a replica is confined to.");

  nb::class_<ResourceDimension>(m, "ResourceDimension", "One named dimension.")
      .def(nb::init<std::string, ResourceKind>(), nb::arg("name"),
           nb::arg("kind") = ResourceKind::pooled)
      .def_ro("name", &ResourceDimension::name)
      .def_ro("kind", &ResourceDimension::kind)
      .def("__eq__", [](const ResourceDimension& a, const ResourceDimension& b) { return a == b; })
      .def("__repr__", [](const ResourceDimension& d) {
        return "ResourceDimension('" + d.name + "', " +
               (d.kind == ResourceKind::device ? "device" : "pooled") + ")";
      });

  nb::class_<ResourceSchema>(m, "ResourceSchema",
                             "The ordered set of resource dimensions of a topology. Immutable "
                             "after construction; amounts are int64 NumPy vectors over it.")
      .def(nb::init<std::vector<ResourceDimension>>(), nb::arg("dimensions"),
           "Builds a schema; ValueError on an empty or duplicate name.")
      .def_static("standard", &ResourceSchema::standard,
                  "The schema of every built-in machine shape: gpu_milli (1000 = one GPU) and "
                  "gpu_memory_mib on devices; cpu_milli (1000 = one core) and memory_mib pooled.")
      .def("__len__", &ResourceSchema::size)
      .def_prop_ro("dimensions", &ResourceSchema::dimensions, "All dimensions in order.")
      .def("names", [](const ResourceSchema& s) {
        std::vector<std::string> names;
        for (const auto& d : s.dimensions()) names.push_back(d.name);
        return names;
      }, "The dimension names in order.")
      .def("index_of", &ResourceSchema::index_of, nb::arg("name"),
           "Index of a dimension; ValueError naming it when unknown.")
      .def("is_device", &ResourceSchema::is_device, nb::arg("index"),
           "Whether dimension `index` is a device dimension.")
      .def("zeros", &ResourceSchema::zeros, "An all-zero vector of this schema's size.")
      .def("make", &vector_from_mapping, nb::arg("amounts"),
           "A vector from a {name: amount} mapping; unnamed dimensions are zero. ValueError on an "
           "unknown name or a negative amount (nothing is clamped).")
      .def("format", &ResourceSchema::format, nb::arg("amounts"),
           "Readable `name=amount` list of the non-zero entries, e.g. 'cpu_milli=4000'.")
      .def("__eq__", [](const ResourceSchema& a, const ResourceSchema& b) { return a == b; });
}

void bind_topology(nb::module_& m) {
  nb::class_<Topology>(
      m, "Topology",
      "Immutable tree of domains with named, ordered levels, per-domain capacities over a "
      "ResourceSchema, and device leaves. Built by TopologyBuilder or the machine shapes.\n\n"
      "Domains are ints: their position in depth-first pre-order, so the subtree of d is the "
      "id range [d, subtree_end(d)). Every capacity is local (the domain's own) or aggregated "
      "(local plus all descendants).\n\n"
      "Thread-safety: immutable; any number of threads may read one instance.")
      .def("__len__", &Topology::size, "Number of domains.")
      .def_prop_ro("levels", &Topology::levels, "Level names, root first.")
      .def_prop_ro("schema", &Topology::schema, nb::rv_policy::reference_internal,
                   "The resource schema.")
      .def_prop_ro("device_level", &Topology::device_level, "The level of device leaves.")
      .def_prop_ro("host_level", &Topology::host_level,
                   "The level a single replica never leaves (e.g. 'node').")
      .def("level_index", &Topology::level_index, nb::arg("name"),
           "Level index of a level name; ValueError naming it (and the known levels) when it "
           "does not exist.")
      .def_static("root", [] { return Topology::root().value; }, "The root domain (0).")
      .def("level", [](const Topology& t, std::uint32_t d) { return t.level(checked_domain(t, d)); },
           nb::arg("domain"), "Level of a domain.")
      .def("parent", [](const Topology& t, std::uint32_t d) -> std::optional<std::uint32_t> {
        const DomainId parent = t.parent(checked_domain(t, d));
        return parent.valid() ? std::optional(parent.value) : std::nullopt;
      }, nb::arg("domain"), "Parent of a domain (None for the root).")
      .def("subtree_end", [](const Topology& t, std::uint32_t d) {
        return t.subtree_end(checked_domain(t, d)).value;
      }, nb::arg("domain"), "One past the last domain of d's subtree, in pre-order.")
      .def("children", [](const Topology& t, std::uint32_t d) {
        return ids_of(t.children(checked_domain(t, d)));
      }, nb::arg("domain"), "Children of d in order.")
      .def("is_device", [](const Topology& t, std::uint32_t d) { return t.is_device(checked_domain(t, d)); },
           nb::arg("domain"), "Whether d is a device leaf.")
      .def("device_count", [](const Topology& t, std::uint32_t d) {
        return t.device_count(checked_domain(t, d));
      }, nb::arg("domain"), "Number of device leaves in d's subtree.")
      .def("path", [](const Topology& t, std::uint32_t d) { return t.path(checked_domain(t, d)); },
           nb::arg("domain"), "Full path below the root, e.g. 'rack0/node3/socket1/numa2/gpu5'; the root is ''.")
      .def("describe", [](const Topology& t, std::uint32_t d) { return t.describe(checked_domain(t, d)); },
           nb::arg("domain"), "A readable label 'level path', e.g. 'numa rack0/node3/numa2'.")
      .def("find", [](const Topology& t, std::string_view path) -> std::optional<std::uint32_t> {
        const auto found = t.find(path);
        return found ? std::optional(found->value) : std::nullopt;
      }, nb::arg("path"), "Looks a domain up by the path `path()` prints; None when there is none.")
      .def("domains_at", [](const Topology& t, LevelIndex level) {
        if (level >= t.levels().size()) {
          throw std::invalid_argument("level index " + std::to_string(level) + " is not in the topology");
        }
        return ids_of(t.domains_at(level));
      }, nb::arg("level"), "All domains of a level (by index), ascending.")
      .def("capacity", [](const Topology& t, std::uint32_t d) {
        return ResourceVector(t.capacity(checked_domain(t, d)));
      }, nb::arg("domain"), "Aggregated capacity (local plus all descendants), an int64 vector.")
      .def("local_capacity", [](const Topology& t, std::uint32_t d) {
        return t.local_capacity(checked_domain(t, d));
      }, nb::arg("domain"), "Local capacity (what the domain itself holds, not its descendants).")
      .def("capacities", [](const Topology& t) { return t.capacities(); },
           "Aggregated capacities, one column per domain (dimensions x domains), a copy.")
      .def("lowest_common_ancestor", [](const Topology& t, std::uint32_t a, std::uint32_t b) {
        return t.lowest_common_ancestor(checked_domain(t, a), checked_domain(t, b)).value;
      }, nb::arg("a"), nb::arg("b"), "Lowest common ancestor of two domains.")
      .def("device_affinity", [](const Topology& t, std::uint32_t a, std::uint32_t b) {
        return t.device_affinity(checked_domain(t, a), checked_domain(t, b));
      }, nb::arg("a"), nb::arg("b"),
         "Affinity between two devices of the same host (e.g. NVLink GB/s), or None when no "
         "matrix was given for that host.")
      .def("memory_bytes", &Topology::memory_bytes, "Bytes held by this object.")
      .def("__repr__", [](const Topology& t) {
        std::string levels;
        for (const auto& l : t.levels()) levels += (levels.empty() ? "" : " > ") + l;
        return "<Topology " + std::to_string(t.size()) + " domains: " + levels + ">";
      });

  nb::class_<TopologyBuilder>(
      m, "TopologyBuilder",
      "Builds a Topology domain by domain. Domains may be added in any order under any existing "
      "parent; build() renumbers them in depth-first pre-order (children keep insertion order).\n\n"
      "Rules checked (each error names the domain): a child's level is deeper than its parent's "
      "(levels may be skipped); devices are leaves and hold only device dimensions; other "
      "domains hold only pooled dimensions; sibling names are unique and contain no '/'; amounts "
      "are non-negative. Handles are ints (the root is 0).")
      .def(nb::init<std::vector<std::string>, ResourceSchema, std::string_view, std::string_view,
                    std::string>(),
           nb::arg("levels"), nb::arg("schema"), nb::arg("device_level"), nb::arg("host_level"),
           nb::arg("root_name") = "root",
           "Starts a topology with `levels` (root first), `schema`, the name of the device level "
           "(leaves) and of the host level (a replica never spans two hosts).")
      .def_static("root", [] { return TopologyBuilder::root().index; }, "The root handle (0).")
      .def("add", [](TopologyBuilder& b, std::uint32_t parent, std::string_view level, std::string name,
                     std::optional<ResourceVector> capacity) {
        return b.add(TopologyBuilder::Handle{parent}, level, std::move(name),
                     capacity.value_or(ResourceVector())).index;
      }, nb::arg("parent"), nb::arg("level"), nb::arg("name"), nb::arg("local_capacity") = nb::none(),
         "Adds a domain at `level` under `parent` with its own (local) capacity (None means "
         "zero) and returns its handle. ValueError, builder unchanged, on a broken rule.")
      .def("set_root_capacity", &TopologyBuilder::set_root_capacity, nb::arg("local_capacity"),
           "Gives the root domain a pooled local capacity (rarely needed).")
      .def("set_affinity", [](TopologyBuilder& b, std::uint32_t host, Eigen::MatrixXd matrix) {
        b.set_affinity(TopologyBuilder::Handle{host}, std::move(matrix));
      }, nb::arg("host"), nb::arg("matrix"),
         "Attaches a device-affinity matrix (square float64, one row per device of that host in "
         "insertion order, symmetric, finite) to a host-level domain. Validated at build().")
      .def("__len__", &TopologyBuilder::size, "Domains added so far (including the root).")
      .def("build", [](TopologyBuilder& b) { return share(b.build()); },
           "Produces the immutable topology (pre-order ids). The builder is left empty.");
}

void bind_shapes(nb::module_& m) {
  nb::class_<shapes::MachineShape>(m, "MachineShape",
                                   "A machine (or a rack that is one NVLink domain) described as "
                                   "a subtree template, for cluster() and single_machine().")
      .def_ro("model", &shapes::MachineShape::model)
      .def_ro("levels", &shapes::MachineShape::levels)
      .def_prop_ro("affinity", [](const shapes::MachineShape& s) { return s.affinity; },
                   "Per-host device x device affinity, or None.");

  nb::module_ shape_module = m.def_submodule(
      "shapes", "Real machine shapes, all over ResourceSchema.standard(); the host level is 'node'.");
  shape_module.def("rtx4090_server", &shapes::rtx4090_server,
                   "The server of the topology-aware preemption paper (arXiv 2411.11560): 8x RTX "
                   "4090 (24 GiB), 2 sockets, 8 NUMA nodes (one GPU each), 2 core groups of 6 "
                   "cores per NUMA node, 64 GiB per NUMA node. Levels: node > socket > numa > "
                   "core_group > gpu.");
  shape_module.def("hgx_h100", &shapes::hgx_h100,
                   "An NVIDIA HGX H100 node: 8x H100 80 GB on NVSwitch, 2 sockets of 56 cores "
                   "with 1 TiB each, 2 PCIe switches per socket with 2 GPUs each. Levels: node > "
                   "socket > numa > pcie_switch > gpu.");
  shape_module.def("dense_8gpu_server", &shapes::dense_8gpu_server,
                   "The node of the benchmarks: 8 GPUs (80 GiB), 2 sockets, 4 PCIe switches "
                   "(NVLink islands of 2 GPUs), 8 NUMA nodes (1 GPU, 8 cores, 128 GiB each). "
                   "Levels: node > socket > pcie_switch > numa > gpu.");
  shape_module.def("gb200_nvl72_rack", &shapes::gb200_nvl72_rack,
                   "An NVIDIA GB200 NVL72 rack: one NVLink domain of 72 GPUs over 18 trays "
                   "('node'), 2 Grace sockets each with 2 GPUs. Levels: rack > node > socket > gpu.");
  shape_module.def("openb_node", &shapes::openb_node, nb::arg("model"), nb::arg("gpus"),
                   nb::arg("cpu_milli"), nb::arg("memory_mib"),
                   "A node of the Alibaba openb trace, internal topology synthesised (see the C++ "
                   "docs). Levels: node > socket > numa > gpu.");
  shape_module.def("single_machine", [](const shapes::MachineShape& s, std::string name) {
    return share(shapes::single_machine(s, std::move(name)));
  }, nb::arg("shape"), nb::arg("name") = "node0",
     "One machine as a whole topology; its root is a 'cluster' domain holding the machine.");
  shape_module.def("cluster", [](const shapes::MachineShape& s, std::size_t count, std::size_t per_rack) {
    return share(shapes::cluster(s, count, per_rack));
  }, nb::arg("shape"), nb::arg("count"), nb::arg("per_rack"),
     "`count` identical machines named node0, node1, ... grouped `per_rack` to a rack: levels "
     "cluster > rack > the shape's levels.");
  shape_module.def("openb_cluster", [](const std::string& path, std::size_t per_rack) {
    return share(shapes::cluster(shapes::load_openb_nodes(path), per_rack));
  }, nb::arg("node_list_csv"), nb::arg("per_rack"),
     "The GPU nodes of an openb node list (`sn,cpu_milli,memory_mib,gpu,model`) as a cluster.");
}

void bind_workload(nb::module_& m) {
  nb::enum_<RequirementMode>(m, "RequirementMode", "How strictly a scope must hold.")
      .value("none", RequirementMode::none, "no topology wish at this scope")
      .value("best_effort", RequirementMode::best_effort,
             "always schedulable; the tighter the placement, the better")
      .value("guaranteed", RequirementMode::guaranteed,
             "must hold exactly, otherwise the workload does not fit");

  nb::class_<TopologyRequirement>(m, "TopologyRequirement",
                                  "'Everything of this scope inside one domain of `level`'.")
      .def(nb::init<RequirementMode, std::string>(), nb::arg("mode") = RequirementMode::none,
           nb::arg("level") = "")
      .def_rw("mode", &TopologyRequirement::mode)
      .def_rw("level", &TopologyRequirement::level, "A level name (ignored when mode is none).")
      .def_static("guaranteed", &TopologyRequirement::guaranteed, nb::arg("level"),
                  "A guaranteed requirement at `level`.")
      .def_static("best_effort", &TopologyRequirement::best_effort, nb::arg("level"),
                  "A best-effort requirement at `level`.")
      .def("__eq__", [](const TopologyRequirement& a, const TopologyRequirement& b) { return a == b; })
      .def("__repr__", [](const TopologyRequirement& r) {
        const char* mode = r.mode == RequirementMode::none ? "none"
                           : r.mode == RequirementMode::guaranteed ? "guaranteed" : "best_effort";
        return std::string("TopologyRequirement(") + mode + (r.level.empty() ? "" : ", '" + r.level + "'") + ")";
      });

  nb::class_<ReplicaDemand>(
      m, "ReplicaDemand",
      "What one replica needs. `whole_devices` > 0: that many devices, each taken entirely; the "
      "device dimensions of `resources` must then be zero. `whole_devices` == 0 with non-zero "
      "device dimensions: a share of one device (e.g. gpu_milli=500). Pooled dimensions (CPU, "
      "memory) come from pools inside the domain the replica is confined to.")
      .def(nb::init<std::int32_t, ResourceVector>(), nb::arg("whole_devices") = 0,
           nb::arg("resources") = ResourceVector())
      .def_rw("whole_devices", &ReplicaDemand::whole_devices)
      .def_rw("resources", &ReplicaDemand::resources,
              "int64 vector over the topology's schema; empty means all zero.");

  nb::class_<CostInputs>(m, "CostInputs", "Inputs of the cost models; all optional (zero means unknown / none).")
      .def(nb::init<double, double, std::string, double, double>(), nb::kw_only(),
           nb::arg("start_time_s") = 0.0, nb::arg("seconds_since_checkpoint") = 0.0,
           nb::arg("model_id") = "", nb::arg("model_size_gib") = 0.0, nb::arg("extra_cost") = 0.0)
      .def_rw("start_time_s", &CostInputs::start_time_s, "when the workload started (seconds, any epoch)")
      .def_rw("seconds_since_checkpoint", &CostInputs::seconds_since_checkpoint, "progress lost if evicted now")
      .def_rw("model_id", &CostInputs::model_id, "model held in GPU memory (for reload cost)")
      .def_rw("model_size_gib", &CostInputs::model_size_gib, "its size")
      .def_rw("extra_cost", &CostInputs::extra_cost, "user-supplied additive cost (e.g. SLO penalty)");

  nb::class_<Workload>(
      m, "Workload",
      "A job: a gang of `replicas` identical replicas with a priority and topology needs. "
      "Preempting it frees every replica; an elastic workload (`min_replicas` < `replicas`) may "
      "instead be shrunk to `min_replicas`.\n\n"
      "`replica_scope`: e.g. guaranteed 'numa' (each replica in one NUMA node); `gang_scope`: "
      "e.g. guaranteed 'rack' (all replicas in one rack). `distinct_hosts`: no two replicas on "
      "one host. Validated against a topology when used (ValueError naming the field).")
      .def("__init__", [](Workload* w, std::uint64_t id, std::string name, std::int32_t priority,
                          bool preemptible, std::int32_t replicas, std::optional<std::int32_t> min_replicas,
                          std::optional<ReplicaDemand> demand, std::int32_t whole_devices,
                          std::optional<ResourceVector> resources,
                          std::optional<TopologyRequirement> replica_scope,
                          std::optional<TopologyRequirement> gang_scope, bool distinct_hosts,
                          std::optional<CostInputs> cost) {
        if (demand && (whole_devices != 0 || resources)) {
          throw std::invalid_argument("workload " + std::to_string(id) +
                                      ": give either demand= or whole_devices=/resources=, not both");
        }
        new (w) Workload{};
        w->id = WorkloadId{id};
        w->name = std::move(name);
        w->priority = priority;
        w->preemptible = preemptible;
        w->replicas = replicas;
        w->min_replicas = min_replicas;
        w->demand = demand.value_or(ReplicaDemand{whole_devices, resources.value_or(ResourceVector())});
        w->replica_scope = replica_scope.value_or(TopologyRequirement{});
        w->gang_scope = gang_scope.value_or(TopologyRequirement{});
        w->distinct_hosts = distinct_hosts;
        w->cost = cost.value_or(CostInputs{});
      },
      nb::arg("id"), nb::kw_only(), nb::arg("name") = "", nb::arg("priority") = 0,
      nb::arg("preemptible") = true, nb::arg("replicas") = 1, nb::arg("min_replicas") = nb::none(),
      nb::arg("demand") = nb::none(), nb::arg("whole_devices") = 0, nb::arg("resources") = nb::none(),
      nb::arg("replica_scope") = nb::none(), nb::arg("gang_scope") = nb::none(),
      nb::arg("distinct_hosts") = false, nb::arg("cost") = nb::none(),
      "A workload; the demand is either `demand=ReplicaDemand(...)` or `whole_devices=` and "
      "`resources=` (int64 vector over the schema).")
      .def_prop_rw("id", [](const Workload& w) { return w.id.value; },
                   [](Workload& w, std::uint64_t id) { w.id = WorkloadId{id}; })
      .def_rw("name", &Workload::name, "for messages only; may be empty")
      .def_rw("priority", &Workload::priority, "larger wins; only strictly lower priorities are victims")
      .def_rw("preemptible", &Workload::preemptible)
      .def_rw("replicas", &Workload::replicas)
      .def_rw("min_replicas", &Workload::min_replicas,
              "elastic lower bound in [1, replicas]; None = not elastic")
      .def_rw("demand", &Workload::demand)
      .def_rw("replica_scope", &Workload::replica_scope)
      .def_rw("gang_scope", &Workload::gang_scope)
      .def_rw("distinct_hosts", &Workload::distinct_hosts,
              "anti-affinity: no two replicas on one host (always enforced)")
      .def_rw("cost", &Workload::cost)
      .def("label", &Workload::label, "\"workload 7 'llama-70b'\" for messages.")
      .def("validate", [](const Workload& w, const Topology& t) { validate(w, t); }, nb::arg("topology"),
           "ValueError naming the workload and the field if it is not valid against `topology`.")
      .def("__repr__", [](const Workload& w) {
        return "<Workload " + std::to_string(w.id.value) + (w.name.empty() ? "" : " '" + w.name + "'") +
               " priority " + std::to_string(w.priority) + ", " + std::to_string(w.replicas) + " replica(s)>";
      });
}

void bind_placement(nb::module_& m) {
  nb::class_<PlacementEntry>(m, "PlacementEntry",
                             "An amount taken from one domain: a whole device, a share of a "
                             "device, or a pooled amount (CPU, memory).")
      .def(nb::init<DomainId, ResourceVector>(), nb::arg("domain"), nb::arg("amount"))
      .def_rw("domain", &PlacementEntry::domain)
      .def_rw("amount", &PlacementEntry::amount)
      .def("__eq__", [](const PlacementEntry& a, const PlacementEntry& b) { return a == b; });
  nb::class_<ReplicaPlacement>(m, "ReplicaPlacement", "Everything one replica holds.")
      .def(nb::init<std::vector<PlacementEntry>>(), nb::arg("entries"))
      .def_rw("entries", &ReplicaPlacement::entries)
      .def("__eq__", [](const ReplicaPlacement& a, const ReplicaPlacement& b) { return a == b; });
  nb::class_<Placement>(m, "Placement", "Everything a workload holds, replica by replica.")
      .def(nb::init<>())
      .def("__init__", [](Placement* p, std::vector<ReplicaPlacement> replicas) {
        new (p) Placement{std::move(replicas)};
      }, nb::arg("replicas"))
      .def_rw("replicas", &Placement::replicas)
      .def("devices", [](const Placement& p, const Topology& t) {
        std::vector<std::uint32_t> ids;
        for (DomainId d : p.devices(t)) ids.push_back(d.value);
        return ids;
      }, nb::arg("topology"), "The device leaves of all replicas, in order.")
      .def("describe", &Placement::describe, nb::arg("topology"),
           "'replica 0: path (amounts), ...; replica 1: ...' for explanations.")
      .def("__eq__", [](const Placement& a, const Placement& b) { return a == b; });

  nb::class_<PlacementSearchResult>(m, "PlacementSearchResult", "Result of a placement search.")
      .def_ro("found", &PlacementSearchResult::found)
      .def_ro("placement", &PlacementSearchResult::placement)
      .def_prop_ro("gang_domain", [](const PlacementSearchResult& r) -> std::optional<std::uint32_t> {
        return r.found ? std::optional(r.gang_domain.value) : std::nullopt;
      }, "lowest domain holding every entry (pools included); None when not found")
      .def_ro("gang_level", &PlacementSearchResult::gang_level)
      .def_ro("replica_level", &PlacementSearchResult::replica_level)
      .def("__bool__", [](const PlacementSearchResult& r) { return r.found; });
}

void bind_allocation(nb::module_& m) {
  nb::class_<StateHandle>(
      m, "Allocation",
      "The cluster state over one Topology: which workload holds which resources of which "
      "domain. Aggregates are kept incrementally: add, remove and shrink cost O(depth x "
      "footprint). Every mutating call validates first and changes nothing when it raises "
      "(ValueError naming the workload, replica and domain at fault).\n\n"
      "Thread-safety: solves release the GIL and read the state concurrently; a mutation waits "
      "until running solves on this state are done (and solves wait for it).")
      .def("__init__", [](StateHandle* h, std::shared_ptr<Topology> topology) {
        if (!topology) throw std::invalid_argument("Allocation needs a topology");
        new (h) StateHandle(Allocation(std::shared_ptr<const Topology>(std::move(topology))));
      }, nb::arg("topology"), "An empty cluster over `topology`.")
      .def_prop_ro("topology", [](const StateHandle& h) { return share(h.allocation.topology_ptr()); },
                   "The topology (shared).")
      .def("copy", [](const StateHandle& h) { return new StateHandle(h.allocation); },
           nb::rv_policy::take_ownership, "An independent copy (shares the immutable topology).")
      .def("__len__", [](const StateHandle& h) { return h.allocation.size(); }, "Number of running workloads.")
      .def("__contains__", [](const StateHandle& h, WorkloadId id) { return h.allocation.contains(id); })
      .def("workload", [](const StateHandle& h, WorkloadId id) { return h.allocation.workload(id); },
           nb::arg("id"), "The running workload `id` (a copy); ValueError naming it when unknown.")
      .def("placement", [](const StateHandle& h, WorkloadId id) { return h.allocation.placement(id); },
           nb::arg("id"), "Where `id` runs.")
      .def("workload_ids", [](const StateHandle& h) {
        std::vector<std::uint64_t> ids;
        for (WorkloadId id : h.allocation.workload_ids()) ids.push_back(id.value);
        return ids;
      }, "Ids of all running workloads in ascending order.")
      .def("used", [](const StateHandle& h, std::uint32_t d) {
        return h.allocation.used(checked_domain(h.allocation.topology(), d));
      }, nb::arg("domain"), "Used amounts of d's subtree (int64 vector).")
      .def("free", [](const StateHandle& h, std::uint32_t d) {
        return h.allocation.free(checked_domain(h.allocation.topology(), d));
      }, nb::arg("domain"), "Free amounts of d's subtree (int64 vector).")
      .def("idle_devices", [](const StateHandle& h, std::uint32_t d) {
        return h.allocation.idle_devices(checked_domain(h.allocation.topology(), d));
      }, nb::arg("domain"), "Devices in d's subtree that nobody uses at all.")
      .def("domain_version", [](const StateHandle& h, std::uint32_t d) {
        return h.allocation.domain_version(checked_domain(h.allocation.topology(), d));
      }, nb::arg("domain"),
         "Version of domain d: changes whenever anything inside its subtree changes, and only then.")
      .def("add", [](StateHandle& h, const Workload& w, const Placement& p) {
        h.mutate([&](Allocation& a) { a.add(w, p); });
      }, nb::arg("workload"), nb::arg("placement"),
         "Starts `workload` at `placement`. ValueError (state unchanged) on an invalid workload, "
         "a duplicate id, a replica count that differs from the placement, an entry on an "
         "unknown domain, a negative or misplaced amount, a replica whose entries do not add up "
         "to its demand, a broken guaranteed requirement, or over-capacity.")
      .def("remove", [](StateHandle& h, WorkloadId id) { h.mutate([&](Allocation& a) { a.remove(id); }); },
           nb::arg("id"), "Stops workload `id`, freeing everything it holds. ValueError naming it when unknown.")
      .def("shrink", [](StateHandle& h, WorkloadId id, std::vector<std::int32_t> drop) {
        h.mutate([&](Allocation& a) { a.shrink(id, drop); });
      }, nb::arg("id"), nb::arg("replicas_to_drop"),
         "Shrinks elastic workload `id` by dropping the replicas with the given indices (the "
         "survivors keep their order and are renumbered). ValueError (state unchanged) if `id` is "
         "unknown or not elastic, an index is out of range or repeated, or the survivors would "
         "fall below `min_replicas`.")
      .def("find_placement", [](const StateHandle& h, const Workload& w,
                                std::optional<std::uint32_t> within) {
        const Topology& t = h.allocation.topology();
        const DomainId inside = within ? checked_domain(t, *within) : Topology::root();
        validate(w, t);
        const Workload copy = w;
        return h.read_released([&](const Allocation& a) { return find_placement(a, copy, inside); });
      }, nb::arg("workload"), nb::arg("within") = nb::none(),
         "Finds a placement of the whole workload inside `within` (default: the whole cluster) "
         "as the state stands, honouring every guaranteed scope and making best-effort scopes "
         "as tight as it can; best fit among domains of the tightest feasible tier.")
      .def("memory_bytes", [](const StateHandle& h) { return h.allocation.memory_bytes(); },
           "Bytes held by the state, excluding the shared topology.")
      .def("__repr__", [](const StateHandle& h) {
        return "<Allocation " + std::to_string(h.allocation.size()) + " workloads on " +
               std::to_string(h.allocation.topology().size()) + " domains>";
      });
}

void bind_generator(nb::module_& m) {
  nb::class_<ClusterSpec>(m, "ClusterSpec",
                          "What generate_cluster builds: dense 8-GPU nodes in racks at the target "
                          "GPU occupancy with mixed-priority workloads (the benchmarks' clusters).")
      .def("__init__", [](ClusterSpec* s, std::size_t nodes, std::size_t per_rack, double occupancy,
                          std::uint64_t seed) {
        new (s) ClusterSpec{};
        s->nodes = nodes;
        s->nodes_per_rack = per_rack;
        s->target_occupancy = occupancy;
        s->seed = seed;
      }, nb::kw_only(), nb::arg("nodes") = 100, nb::arg("nodes_per_rack") = 32,
         nb::arg("target_occupancy") = 0.92, nb::arg("seed") = 1)
      .def_rw("nodes", &ClusterSpec::nodes)
      .def_rw("nodes_per_rack", &ClusterSpec::nodes_per_rack)
      .def_rw("target_occupancy", &ClusterSpec::target_occupancy)
      .def_rw("seed", &ClusterSpec::seed)
      .def_rw("gang_fraction", &ClusterSpec::gang_fraction)
      .def_rw("elastic_fraction", &ClusterSpec::elastic_fraction)
      .def_rw("serving_fraction", &ClusterSpec::serving_fraction)
      .def_rw("cpu_only_per_node", &ClusterSpec::cpu_only_per_node)
      .def_rw("now_s", &ClusterSpec::now_s);
  m.def("generate_cluster", [](const ClusterSpec& spec) {
    GeneratedCluster generated = [&] {
      nb::gil_scoped_release release;
      return generate_cluster(spec);
    }();
    return new StateHandle(std::move(generated.state));
  }, nb::arg("spec"), nb::rv_policy::take_ownership,
     "A seeded synthetic cluster (the same spec gives the same state everywhere); its topology "
     "is the returned state's `topology`.");

  nb::enum_<PreemptorKind>(m, "PreemptorKind", "Preemptor shapes of the benchmarks, for the dense 8-GPU node.")
      .value("nvlink_island", PreemptorKind::nvlink_island)
      .value("numa", PreemptorKind::numa)
      .value("socket", PreemptorKind::socket)
      .value("node", PreemptorKind::node)
      .value("rack_gang", PreemptorKind::rack_gang)
      .value("best_effort", PreemptorKind::best_effort);
  m.def("make_preemptor", [](PreemptorKind kind, std::int32_t gpus, std::int32_t replicas,
                             std::int32_t priority, std::uint64_t id) {
    PreemptorSpec spec;
    spec.kind = kind;
    spec.gpus = gpus;
    spec.replicas = replicas;
    spec.priority = priority;
    spec.id = WorkloadId{id};
    return make_preemptor(spec);
  }, nb::arg("kind"), nb::arg("gpus") = 8, nb::kw_only(), nb::arg("replicas") = 2,
     nb::arg("priority") = generated_priority::preemptor, nb::arg("id") = std::uint64_t{1} << 62,
     "The pending high-priority workload of the benchmarks' kind `kind` with `gpus` GPUs.");
}

}  // namespace

void bind_model(nb::module_& m) {
  bind_resources(m);
  bind_topology(m);
  bind_shapes(m);
  bind_workload(m);
  bind_placement(m);
  bind_allocation(m);
  bind_generator(m);
}

}  // namespace topopreempt::python
