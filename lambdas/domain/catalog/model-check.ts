import { DomainError, type FieldIssue } from '../errors';
import type { ComputeLike } from '../placement';
import type { NewModel } from './transitions';

/** The pluggable pre-add check: refuses a model that cannot run before it is written. */

export interface ModelCheckContext {
  verb: 'add' | 'replace' | 'resources';
  computes: readonly ComputeLike[];
}

/**
 * Refuses a model that cannot run, before it is written: returns problems (empty when it can run), each in words
 * or as an issue at the field it is about (`spec.source`). Deployments give theirs to the services
 * (createServices' `modelCheck`), e.g. to check that the weights exist.
 */
export type ModelCheck = (model: NewModel, ctx: ModelCheckContext) => Promise<(string | FieldIssue)[]>;

const GPU_ENGINES = new Set(['vllm', 'sglang', 'tgi']);
const GGUF_ENGINES = new Set(['llamacpp', 'ollama']);

/** A GGUF source names a .gguf file, or a repository or prefix whose name says GGUF (hf://Qwen/Qwen3-8B-GGUF). */
export function isGgufSource(source: string): boolean {
  return /gguf/i.test(source);
}

/**
 * The default check, from what the engines load and where they run:
 * - llama.cpp and Ollama load GGUF weights only; TGI never loads GGUF; vLLM and SGLang load safetensors, or
 *   GGUF as one file (so a GGUF source for them must name the .gguf file).
 * - vLLM, SGLang and TGI need a GPU in every profile; llama.cpp and Ollama run on CPU or GPU.
 * - an s3:// source names a prefix, not a whole bucket.
 */
export function engineIssues(m: Pick<NewModel, 'spec'>): FieldIssue[] {
  const { source, engine, profiles } = m.spec;
  const problems: FieldIssue[] = [];
  if (/^s3:\/\/[^/]+\/?$/.test(source)) {
    problems.push({
      path: 'spec.source',
      message: `source ${source} names a whole bucket; point it at the prefix that holds the weights`,
    });
  }
  const gguf = isGgufSource(source);
  if (GGUF_ENGINES.has(engine) && !gguf) {
    problems.push({
      path: 'spec.source',
      message: `engine ${engine} loads GGUF weights and ${source} names none; point source at a .gguf file or a *-GGUF repository, or use vllm, sglang or tgi`,
    });
  }
  if (engine === 'tgi' && gguf) {
    problems.push({
      path: 'spec.engine',
      message: `engine tgi cannot load GGUF weights (${source}); use llamacpp or ollama, or safetensors weights`,
    });
  }
  if ((engine === 'vllm' || engine === 'sglang') && gguf && !/\.gguf$/i.test(source)) {
    problems.push({
      path: 'spec.source',
      message: `engine ${engine} loads GGUF only as one file; name the .gguf file in source, not ${source}`,
    });
  }
  if (GPU_ENGINES.has(engine)) {
    profiles.forEach((p, i) => {
      if (p.gpus !== 0) return;
      problems.push({
        path: `spec.profiles[${i}].gpus`,
        message: `engine ${engine} needs a GPU and profile ${p.name} asks for none; give it gpus and gpuType, or use llamacpp or ollama to serve on CPU`,
      });
    });
  }
  return problems;
}

/** The default check's problems in words. */
export function engineProblems(m: Pick<NewModel, 'spec'>): string[] {
  return engineIssues(m).map((i) => i.message);
}

export const defaultModelCheck: ModelCheck = async (m) => engineIssues(m);

export function checkRefusal(name: string, problems: readonly (string | FieldIssue)[]): DomainError {
  // A problem in words is about the model as a whole: its path is spec.
  const errors = problems.map((p) => (typeof p === 'string' ? { path: 'spec', message: p } : p));
  return new DomainError(
    'invalid',
    errors.length === 1
      ? `model ${name} cannot run: ${errors[0]!.message}`
      : `model ${name} cannot run; fix each problem in errors`,
    { reason: 'CannotRun', errors },
  );
}
