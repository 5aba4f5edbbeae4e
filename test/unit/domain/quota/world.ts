import type { Headroom } from '../../../../lambdas/domain/headroom';
import type { ModelClass, Profile } from '../../../../lambdas/domain/model';
import {
  type AdmissionModel,
  checkStart,
  type Decision,
  decide,
  type ModelAdmission,
  modelStatus,
  type Quota,
  type Scope,
  type StartCheck,
} from '../../../../lambdas/domain/quota';
import type { Resources } from '../../../../lambdas/domain/resources';
import { type SimpleCompute, SimpleHeadroom } from '../../../helpers/simple-headroom';

/**
 * A small world for admission scenarios: a tree written as `child<parent`, GPU quotas as numbers (or full
 * resources), a roomy GPU compute unless told otherwise, and a store that keeps each pass's admissions.
 */

export type Amounts = number | Partial<Resources>;
const res = (a: Amounts | undefined): Partial<Resources> | undefined =>
  a === undefined ? undefined : typeof a === 'number' ? { gpus: a } : a;

export const BIG: SimpleCompute = { name: 'gpu-big', gpus: 8, cores: 1000, memoryGb: 10000, maxNodes: 1000 };
export const CPU: SimpleCompute = { name: 'cpu-big', gpus: 0, cores: 1000, memoryGb: 10000, maxNodes: 1000 };

export interface ModelOpts {
  gpus?: number;
  cores?: number;
  mem?: number;
  min?: number;
  target?: number;
  max?: number;
  cls?: ModelClass;
  profiles?: Profile[];
}

export class World {
  scopes: Scope[];
  quotas: Quota[];
  models: AdmissionModel[] = [];
  admissions = new Map<string, ModelAdmission>();
  clock = 0;
  last?: Decision;

  constructor(
    tree: string[],
    quotas: Record<string, { g?: Amounts; l?: Amounts }> = {},
    readonly computes: SimpleCompute[] = [BIG, CPU],
  ) {
    this.scopes = tree.map((t) => {
      const [name, parent] = t.split('<');
      return { name: name!, ...(parent ? { parent } : {}) };
    });
    this.quotas = Object.entries(quotas).map(([scope, q]) => ({
      scope,
      guarantee: res(q.g) ?? {},
      ...(q.l !== undefined ? { limit: res(q.l) } : {}),
    }));
  }

  now(): string {
    return new Date(Date.UTC(2025, 0, 1, 0, 0, this.clock)).toISOString();
  }

  model(name: string, owner: string | undefined, o: ModelOpts = {}): AdmissionModel {
    const min = o.min ?? 1;
    const m: AdmissionModel = {
      name,
      ...(owner ? { owner } : {}),
      createdAt: this.now(),
      spec: {
        profiles: o.profiles ?? [
          { name: 'p', gpus: o.gpus ?? 1, cpuCores: o.cores ?? 1, ...(o.mem ? { minMemoryGb: o.mem } : {}) },
        ],
        scaling: {
          min,
          max: o.max ?? Math.max(min, o.target ?? min, 1),
          ...(o.target !== undefined ? { target: o.target } : {}),
        },
        ...(o.cls ? { class: o.cls } : {}),
      },
    };
    this.models = [...this.models.filter((x) => x.name !== name), m];
    this.clock++;
    return m;
  }

  remove(name: string): void {
    this.models = this.models.filter((m) => m.name !== name);
  }

  setQuota(scope: string, g: Amounts, l?: Amounts): void {
    this.quotas = [
      ...this.quotas.filter((q) => q.scope !== scope),
      { scope, guarantee: res(g)!, ...(l !== undefined ? { limit: res(l) } : {}) },
    ];
  }

  headroom(computes = this.computes): SimpleHeadroom {
    const h = SimpleHeadroom.of(computes);
    for (const a of this.admissions.values())
      for (const u of a.units) h.restore(u.id, u.resources, u.placements);
    return h;
  }

  input(draining?: Set<string>) {
    return {
      scopes: this.scopes,
      quotas: this.quotas,
      models: this.models,
      admissions: [...this.admissions.values()],
      headroom: this.headroom() as Headroom,
      now: this.now(),
      ...(draining ? { draining } : {}),
    };
  }

  /** One reconcile pass; its result becomes the stored state. */
  pass(draining?: Set<string>): Decision {
    const d = decide(this.input(draining));
    this.store(d);
    this.clock += 60;
    return d;
  }

  store(d: Decision): void {
    for (const a of d.admissions) this.admissions.set(a.model, a);
    for (const r of d.removed) this.admissions.delete(r);
    this.last = d;
  }

  /** The API's start of a model: refused, or stored with its min decided. */
  start(name: string, owner: string | undefined, o: ModelOpts = {}): StartCheck {
    const m = this.model(name, owner, o);
    this.models = this.models.filter((x) => x !== m);
    const r = checkStart({ ...this.input(), emptyHeadroom: SimpleHeadroom.of(this.computes) }, m);
    if (r.ok) {
      this.models.push(m);
      this.store(r.decision);
    }
    this.clock += 60;
    return r;
  }

  status(name: string) {
    const m = this.models.find((x) => x.name === name)!;
    return modelStatus(m, this.admissions.get(name));
  }

  /** GPUs the model holds. */
  held(name: string): number {
    return (this.admissions.get(name)?.units ?? []).reduce((n, u) => n + u.replicas * u.resources.gpus, 0);
  }

  admitted(name: string): number {
    return (this.admissions.get(name)?.units ?? []).reduce((n, u) => n + u.replicas, 0);
  }

  reasons(name: string): string[] {
    return (this.admissions.get(name)?.pending ?? []).map((p) => p.reason);
  }

  message(name: string): string {
    return (this.admissions.get(name)?.pending ?? []).map((p) => p.message).join(' | ');
  }

  usage(scope: string): Resources {
    return this.last!.scopes.find((s) => s.scope === scope)!.usage;
  }

  gpus(scope: string): number {
    return this.usage(scope).gpus;
  }
}
