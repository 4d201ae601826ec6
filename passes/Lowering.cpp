#include "passes/Lowering.h"

#include "admission/SliceBinding.h"
#include "ir/FieldDefaults.h"
#include "passes/GpuCount.h"
#include "passes/Resolve.h"
#include "plan/PlanFile.h"

namespace msc::passes {

namespace {

int32_t numaOr(std::optional<unsigned> node) { return node ? static_cast<int32_t>(*node) : -1; }

template <typename T, typename F> auto valueOr(const std::optional<ir::Field<T>> &field, F fallback) {
  return field ? field->value : fallback;
}

} // namespace

uint32_t queuePairsOf(const ir::Contract &contract, const ir::Role &role) {
  const auto &compute = contract.body.compute;
  int64_t qps = role.fields.queue_pairs ? role.fields.queue_pairs->value
                                        : (compute.rdma_qps ? compute.rdma_qps->value : int64_t(1));
  return static_cast<uint32_t>(std::max<int64_t>(1, qps));
}

namespace {
void lowerLending(const ir::Contract &contract, plan::Plan &out) {
  const ir::ComputeFields &compute = contract.body.compute;
  if (compute.class_ && compute.class_->value == "opportunistic") {
    plan::Borrow *b = out.mutable_borrow();
    b->set_cpu_cores(static_cast<uint32_t>(valueOr(compute.cpu_cores, int64_t(0))));
    b->set_memory_bytes(compute.memory ? compute.memory->value.value : 0);
    b->set_gpu_sm_slices(static_cast<uint32_t>(valueOr(compute.gpu_sm_slices, int64_t(0))));
    b->set_rdma_queue_pairs(static_cast<uint32_t>(valueOr(compute.rdma_qps, int64_t(0))));
    return;
  }
  if (contract.body.phases.empty())
    return;
  plan::Lending *l = out.mutable_lending();
  for (const ir::Phase &phase : contract.body.phases) {
    plan::Phase *p = l->add_phases();
    p->set_name(phase.name);
    for (const ir::PhaseUse &use : phase.uses) {
      const ir::Role *role = contract.body.role(use.role);
      for (const std::string &name : role ? checkedRoleNames(*role) : std::vector<std::string>{use.role}) {
        plan::Phase::Use *u = p->add_uses();
        u->set_role(name);
        for (ir::ResourceKind k : use.exclusive)
          u->add_exclusive(ir::resourceKindName(k).str());
      }
    }
    switch (phase.when.kind) {
    case ir::PhaseWhen::Kind::Worker: p->set_trigger(plan::Phase::WORKER); break;
    case ir::PhaseWhen::Kind::Steps:
      p->set_trigger(plan::Phase::STEPS);
      p->set_every_steps(phase.when.everySteps);
      p->set_for_steps(phase.when.forSteps);
      break;
    case ir::PhaseWhen::Kind::WallTime:
      p->set_trigger(plan::Phase::WALL_TIME);
      p->set_from_ns(phase.when.from.value);
      p->set_to_ns(phase.when.to.value);
      break;
    }
  }
  const ir::LendingFields &lf = contract.body.lending;
  l->set_reclaim_within_ns(lf.reclaim_within ? lf.reclaim_within->value.value
                                             : uint64_t(ir::defaults::lending::reclaim_within));
  bool automatic = lf.lead ? lf.lead->value.automatic : ir::defaults::lending::lead < 0;
  l->set_lead_auto(automatic);
  if (!automatic)
    l->set_lead_ns(lf.lead ? lf.lead->value.fixed.value : uint64_t(ir::defaults::lending::lead));
}
} // namespace

plan::Plan lowerToPlan(const ir::Contract &contract, const Placement &placement, const PlanDecisions &decisions,
                       const hal::Topology &topo, llvm::StringRef compilerVersion) {
  plan::Plan out;
  out.set_format_major(plan::kFormatMajor);
  out.set_format_minor(plan::kFormatMinor);
  plan::Provenance *prov = out.mutable_provenance();
  prov->set_contract(contract.name);
  prov->set_source_file(contract.sourceFile);
  prov->set_source_hash(contract.sourceHash);
  prov->set_compiler_version(compilerVersion.str());
  prov->set_topology_fingerprint(topo.fingerprint());
  prov->set_topology_name(topo.name());
  prov->set_profile(contract.profile);
  for (const std::string &p : contract.chain)
    prov->add_profile_chain(p);
  if (contract.body.compute.nodes) {
    const ir::CountRange &nodes = contract.body.compute.nodes->value;
    prov->set_nodes(static_cast<uint32_t>(nodes.max));
    if (nodes.elastic())
      prov->set_min_nodes(static_cast<uint32_t>(nodes.min));
  }

  const ir::ComputeFields &compute = contract.body.compute;
  if (compute.cpu_weight)
    out.set_cpu_weight(static_cast<uint32_t>(compute.cpu_weight->value));
  unsigned division = compute.gpu_sm_slices && compute.gpu_sm_slices->value > 0
                          ? static_cast<unsigned>(compute.gpu_sm_slices->value)
                          : 1;
  // The contract may be the one as written: a role of `gpus = N` was checked as N copies
  // (passes/GpuCount.h), and each copy is lowered like a role written out, with the role's fields.
  std::vector<std::pair<const ir::Role *, std::string>> lowered;
  for (const ir::Role &role : contract.body.roles)
    for (std::string &name : checkedRoleNames(role))
      lowered.emplace_back(&role, std::move(name));
  for (const auto &[role, name] : lowered) {
    const RolePlacement *r = placement.findRole(name);
    if (!r)
      continue;
    const ir::RoleFields &f = role->fields;
    if (r->gpu) {
      plan::GpuSlice *s = out.add_gpu_slices();
      s->set_role(name);
      unsigned slices = std::max(1u, r->smSlices);
      s->set_slices(slices);
      s->set_slices_per_gpu(std::max(division, slices));
      // The placement chose this GPU of `topo`, so the lookup finds it.
      if (std::optional<hal::GpuRef> ref = topo.gpuByPci(r->gpu->pci))
        admission::bindSliceToGpu(*s, topo, *ref);
      if (f.gpu_memory) {
        s->set_memory_limit_bytes(f.gpu_memory->value.value);
      } else if (compute.gpu_memory) {
        s->set_memory_limit_bytes(compute.gpu_memory->value.value);
        s->set_memory_per_gpu(true);
      }
      s->set_stream_priority(static_cast<int32_t>(valueOr(f.stream_priority, ir::defaults::role::stream_priority)));
      if (f.gpu && f.gpu->value.form == ir::GpuRef::Form::Uuid)
        s->set_uuid(f.gpu->value.uuid);
      s->set_bound(r->gpuBound);
    }
    if (!r->cpus.empty() || !r->blockDevice.empty() || f.io_depth || f.threads || f.decoder || f.gds) {
      plan::IoBinding *b = out.add_io_bindings();
      b->set_role(name);
      b->set_threads(static_cast<uint32_t>(valueOr(f.threads, static_cast<int64_t>(r->cpus.size()))));
      for (unsigned cpu : r->cpus)
        b->add_cpus(cpu);
      for (unsigned core : r->physicalCores)
        b->add_physical_cores(core);
      b->set_numa_node(numaOr(r->numaNode));
      b->set_numa_node_declared(f.numa_node.has_value());
      b->set_block_device(r->blockDevice);
      if (r->blockPci)
        b->set_block_pci(r->blockPci->str());
      b->set_io_uring_depth(static_cast<uint32_t>(valueOr(f.io_depth, int64_t(0))));
      b->set_io_weight(static_cast<uint32_t>(valueOr(f.io_weight, int64_t(0))));
      b->set_io_limit_bps(f.io_limit ? f.io_limit->value.value : 0);
      b->set_decoder(valueOr(f.decoder, std::string()));
      b->set_gpu_direct_storage(valueOr(f.gds, bool(ir::defaults::role::gds)));
      b->set_cpus_bound(r->cpusBound);
    }
    if (f.memory_pool) {
      plan::MemoryPool *m = out.add_memory_pools();
      m->set_role(name);
      m->set_page_size(f.memory_pool->value.pageSize.value);
      m->set_pages(f.memory_pool->value.count);
      m->set_numa_node(numaOr(r->poolNumaNode ? r->poolNumaNode : r->numaNode));
      for (const admission::HugepageReservation &reserve : decisions.hugepageReservations)
        if (reserve.role == name)
          m->set_reserve_pages(reserve.pages);
    }
    if (f.rdma_port) {
      plan::RdmaSetting *rd = out.add_rdma();
      rd->set_role(name);
      // From the placement: `rdma_port = nearest` names its device only once bound.
      rd->set_device(r->rdmaDevice);
      rd->set_port(r->rdmaPort);
      rd->set_queue_pairs(queuePairsOf(contract, *role));
      rd->set_max_outstanding(static_cast<uint32_t>(valueOr(f.max_outstanding, ir::defaults::role::max_outstanding)));
      rd->set_retry_count(static_cast<uint32_t>(valueOr(f.retry_count, ir::defaults::role::retry_count)));
      rd->set_timeout_ns(f.rdma_timeout ? f.rdma_timeout->value.value : uint64_t(ir::defaults::role::rdma_timeout));
      rd->set_link_layer(valueOr(f.link_layer, std::string()));
      if (f.failover_port) {
        rd->set_failover_device(f.failover_port->value.device);
        rd->set_failover_port(f.failover_port->value.port);
      }
      rd->set_numa_node(numaOr(r->rdmaNumaNode));
      rd->set_bound(r->rdmaBound);
    }
  }

  const ir::FaultToleranceFields &ft = contract.body.faultTolerance;
  plan::FaultTolerance *pft = out.mutable_fault_tolerance();
  if (ft.recovery_point) {
    pft->set_snapshot_every_steps(ft.recovery_point->value.steps);
    pft->set_snapshot_interval_ns(ft.recovery_point->value.interval.value);
  }
  pft->set_keep_snapshots(
      static_cast<uint32_t>(valueOr(ft.keep_snapshots, ir::defaults::fault_tolerance::keep_snapshots)));
  pft->set_data_loader_offsets(valueOr(ft.stateful_io, bool(ir::defaults::fault_tolerance::stateful_io)));
  pft->set_rng_state(valueOr(ft.rng_state, bool(ir::defaults::fault_tolerance::rng_state)));
  pft->set_loss_scale(valueOr(ft.loss_scale, bool(ir::defaults::fault_tolerance::loss_scale)));
  pft->set_lr_scheduler(valueOr(ft.lr_scheduler, bool(ir::defaults::fault_tolerance::lr_scheduler)));
  pft->set_in_memory_tier(valueOr(ft.in_memory_tier, bool(ir::defaults::fault_tolerance::in_memory_tier)));
  pft->set_heartbeat_ns(ft.heartbeat ? ft.heartbeat->value.value : uint64_t(ir::defaults::fault_tolerance::heartbeat));
  if (ft.start_within)
    pft->set_start_within_ns(ft.start_within->value.value);
  pft->set_heartbeat_misses(
      static_cast<uint32_t>(valueOr(ft.heartbeat_misses, ir::defaults::fault_tolerance::heartbeat_misses)));
  pft->set_snapshot_dir(valueOr(ft.snapshot_dir, std::string()));
  pft->set_standby_worker(valueOr(ft.standby_worker, bool(ir::defaults::fault_tolerance::standby_worker)));

  const ir::ScalingFields &sc = contract.body.scaling;
  plan::ScalingPolicy *ps = out.mutable_scaling();
  ps->set_target_density(valueOr(compute.target_density, 0.0));
  uint64_t deviation = sc.density_deviation ? sc.density_deviation->value.value
                                            : uint64_t(ir::defaults::scaling::density_deviation);
  ps->set_deviation_ppm(static_cast<uint32_t>(deviation));
  ps->set_scale_up_below_mc(sc.scale_up_below ? sc.scale_up_below->value.value : ir::defaults::scaling::scale_up_below);
  ps->set_throttle_at_mc(sc.throttle_at ? sc.throttle_at->value.value : ir::defaults::scaling::throttle_at);
  ps->set_hysteresis_mc(sc.hysteresis ? sc.hysteresis->value.value : ir::defaults::scaling::hysteresis);
  ps->set_window_ns(sc.window ? sc.window->value.value : uint64_t(ir::defaults::scaling::window));
  ps->set_windows(static_cast<uint32_t>(valueOr(sc.windows, ir::defaults::scaling::windows)));
  ps->set_cooldown_ns(sc.cooldown ? sc.cooldown->value.value : uint64_t(ir::defaults::scaling::cooldown));
  ps->set_min_sm_slices(static_cast<uint32_t>(valueOr(sc.min_sm_slices, int64_t(0))));
  ps->set_max_sm_slices(static_cast<uint32_t>(valueOr(sc.max_sm_slices, int64_t(0))));
  lowerLending(contract, out);
  return out;
}

} // namespace msc::passes
