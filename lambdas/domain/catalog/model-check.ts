import { DomainError } from '../errors';
import type { ComputeLike } from '../placement';
import type { NewModel } from './transitions';

/** The pluggable pre-add check: refuses a model that cannot run before it is written. */

export interface ModelCheckContext {
  verb: 'add' | 'replace' | 'resources';
  computes: readonly ComputeLike[];
}

/**
 * Refuses a model that cannot run, before it is written: returns problems in words (empty when it can run).
 * Deployments give theirs to the services (createServices' `modelCheck`), e.g. to check that the weights exist.
 */
export type ModelCheck = (model: NewModel, ctx: ModelCheckContext) => Promise<string[]>;

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
export function engineProblems(m: Pick<NewModel, 'spec'>): string[] {
  const { source, engine, profiles } = m.spec;
  const problems: string[] = [];
  if (/^s3:\/\/[^/]+\/?$/.test(source)) {
    problems.push(`source ${source} names a whole bucket; point it at the prefix that holds the weights`);
  }
  const gguf = isGgufSource(source);
  if (GGUF_ENGINES.has(engine) && !gguf) {
    problems.push(
      `engine ${engine} loads GGUF weights and ${source} names none; point source at a .gguf file or a *-GGUF repository, or use vllm, sglang or tgi`,
    );
  }
  if (engine === 'tgi' && gguf) {
    problems.push(
      `engine tgi cannot load GGUF weights (${source}); use llamacpp or ollama, or safetensors weights`,
    );
  }
  if ((engine === 'vllm' || engine === 'sglang') && gguf && !/\.gguf$/i.test(source)) {
    problems.push(
      `engine ${engine} loads GGUF only as one file; name the .gguf file in source, not ${source}`,
    );
  }
  if (GPU_ENGINES.has(engine)) {
    for (const p of profiles.filter((x) => x.gpus === 0)) {
      problems.push(
        `engine ${engine} needs a GPU and profile ${p.name} asks for none; give it gpus and gpuType, or use llamacpp or ollama to serve on CPU`,
      );
    }
  }
  return problems;
}

export const defaultModelCheck: ModelCheck = async (m) => engineProblems(m);

export function checkRefusal(name: string, problems: readonly string[]): DomainError {
  return new DomainError(
    'invalid',
    problems.length === 1
      ? `model ${name} cannot run: ${problems[0]}`
      : `model ${name} cannot run; fix each problem in errors`,
    { reason: 'CannotRun', errors: problems.map((message) => ({ path: 'spec', message })) },
  );
}
