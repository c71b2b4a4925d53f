// The container engine of the image test: Debian's podman, run as root through its CLI. Only this
// file knows podman's flags and what this kind of machine needs of them (see docs/testing.md,
// "The image test"): runc where it is installed, ulimits within our own, and the host's network.
import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** PACKAGES are the Debian packages the image test needs: the engine, its runtime, and debootstrap for the bases. */
export const PACKAGES = ['podman', 'runc', 'debootstrap'];

/** BuildOptions are `podman build`'s inputs. */
export interface BuildOptions {
  file: string;
  context: string;
  tag: string;
  buildArgs: Record<string, string>;
  /** platform is the image's OS/ARCH (linux/amd64, linux/arm64): another than the machine's is built under emulation. */
  platform?: string;
}

/** RunOptions describe a detached container; mounts are read-only bind mounts, host path to container path. */
export interface RunOptions {
  image: string;
  name: string;
  args: string[];
  user: string;
  env: Record<string, string>;
  mounts: Record<string, string>;
  /** Flags passed as they are, e.g. the security settings under test. */
  flags: string[];
  /** maxSeconds bounds its life: conmon kills it then, even if whoever started it died without removing it. */
  maxSeconds: number;
}

/** Container is a started container, known by its name. */
export interface Container {
  name: string;
  /** pid is the host PID of the container's first process. */
  pid(): Promise<number>;
  /** logs is what the container has written to stdout and stderr so far. */
  logs(): Promise<string>;
  /** stop sends SIGTERM, waits up to timeoutSeconds (then SIGKILL), and returns the exit code. */
  stop(timeoutSeconds: number): Promise<number>;
  /** remove removes it, stopping it first with SIGKILL if it still runs. */
  remove(): Promise<void>;
}

export class Podman {
  readonly #global: string[];
  readonly #ulimits: string[];

  private constructor(global: string[], ulimits: string[]) {
    this.#global = global;
    this.#ulimits = ulimits;
  }

  /**
   * find returns podman if it is on PATH; else, as root with apt-get, installs PACKAGES first;
   * else a reason why no engine can be had here.
   */
  static async find(): Promise<Podman | { unavailable: string }> {
    if (!(await onPath('podman'))) {
      if (process.getuid?.() !== 0 || !(await onPath('apt-get'))) {
        return { unavailable: 'podman is not on PATH, and installing it takes root and apt-get' };
      }
      process.stderr.write(`podman missing: apt-get install ${PACKAGES.join(' ')}\n`);
      await exec('apt-get', ['update', '-qq']);
      await exec('apt-get', ['install', '-y', '-qq', ...PACKAGES], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    }
    // crun (podman's default) refuses a hybrid cgroup hierarchy in which cgroup v2 holds a
    // controller ("cgroups in hybrid mode not supported"), as on these machines; runc runs there.
    const global = (await onPath('runc')) ? ['--runtime', 'runc'] : [];
    return new Podman(global, await ulimits());
  }

  async imageExists(tag: string): Promise<boolean> {
    const { code } = await this.#run(['image', 'exists', tag]);
    return code === 0;
  }

  /** imageLabel is the image's label `key`, or null when the image or the label is missing. */
  async imageLabel(tag: string, key: string): Promise<string | null> {
    const { code, stdout } = await this.#run(['image', 'inspect', '--format', '{{json .Labels}}', tag]);
    if (code !== 0) return null;
    const labels = JSON.parse(stdout) as Record<string, string> | null;
    return labels?.[key] ?? null;
  }

  /** imageId is the ID the tag points at, or null if there is no such image. */
  async imageId(tag: string): Promise<string | null> {
    const { code, stdout } = await this.#run(['image', 'inspect', '--format', '{{.Id}}', tag]);
    return code === 0 ? stdout.trim() : null;
  }

  /** removeImageIfUnused removes an image by ID unless a container or another image still uses it. */
  async removeImageIfUnused(id: string): Promise<void> {
    await this.#run(['image', 'rm', id]);
  }

  /** imageSize is the image's size in bytes, all layers uncompressed, as `podman images` counts it. */
  async imageSize(tag: string): Promise<number> {
    return Number((await this.#ok(['image', 'inspect', '--format', '{{.Size}}', tag])).trim());
  }

  /** imageConfig is what a container of the image runs, unless told otherwise. */
  async imageConfig(tag: string): Promise<{ user: string; entrypoint: string[]; cmd: string[] }> {
    const config = JSON.parse(await this.#ok(['image', 'inspect', '--format', '{{json .Config}}', tag])) as {
      User?: string;
      Entrypoint?: string[] | null;
      Cmd?: string[] | null;
    };
    return { user: config.User ?? '', entrypoint: config.Entrypoint ?? [], cmd: config.Cmd ?? [] };
  }

  /** imageHistory is what made each of the image's layers, newest first, as `podman history` shows it. */
  async imageHistory(tag: string): Promise<string[]> {
    return (await this.#ok(['history', '--no-trunc', '--format', '{{.CreatedBy}}', tag])).trim().split('\n');
  }

  /** build runs `podman build` with the host's network (the build stage runs npm ci); output goes to onOutput. */
  async build(o: BuildOptions, onOutput: (chunk: string) => void = () => {}): Promise<void> {
    const args = [
      'build', '--network', 'host', ...this.#ulimits, '-f', o.file, '-t', o.tag, ...(o.platform === undefined ? [] : ['--platform', o.platform]),
      ...Object.entries(o.buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
      o.context,
    ];
    const { code, stdout, stderr } = await this.#run(args, onOutput);
    if (code !== 0) throw new Error(`podman build -t ${o.tag} failed (exit ${code}):\n${tail(stdout + stderr)}`);
  }

  /** run starts a detached container on the host's network. */
  async run(o: RunOptions): Promise<Container> {
    const args = [
      'run', '--detach', '--name', o.name, '--timeout', String(o.maxSeconds), '--network', 'host', '--user', o.user,
      ...this.#ulimits, ...o.flags,
      ...Object.entries(o.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      ...Object.entries(o.mounts).flatMap(([host, path]) => ['--volume', `${host}:${path}:ro`]),
      o.image, ...o.args,
    ];
    await this.#ok(args);
    return {
      name: o.name,
      pid: async () => Number((await this.#ok(['inspect', '--format', '{{.State.Pid}}', o.name])).trim()),
      logs: async () => {
        const { stdout, stderr } = await this.#run(['logs', o.name]);
        return stdout + stderr;
      },
      stop: async (timeoutSeconds) => {
        await this.#ok(['stop', '--time', String(timeoutSeconds), o.name]);
        return Number((await this.#ok(['inspect', '--format', '{{.State.ExitCode}}', o.name])).trim());
      },
      remove: async () => {
        await this.#run(['rm', '--force', '--time', '0', o.name]);
      },
    };
  }

  /**
   * inStore is this podman with an image store of its own under `dir` (its --root and --runroot),
   * in which nothing of the machine's store is seen: to load an archive as another machine would.
   * podman refuses a runroot over 50 characters, so `dir` must be short (a mkdtemp under /tmp).
   */
  inStore(dir: string): Podman {
    return new Podman([...this.#global, '--root', `${dir}/storage`, '--runroot', `${dir}/run`], this.#ulimits);
  }

  /** saveOciArchive writes the image to `file` as an OCI archive (a tar of an OCI image layout), as a release ships it. */
  async saveOciArchive(tag: string, file: string): Promise<void> {
    await this.#ok(['save', '--format', 'oci-archive', '--output', file, tag]);
  }

  /**
   * saveMultiArchArchive writes the images `tags` (one per platform) to `file` as one OCI archive
   * whose index lists each: `skopeo copy --all oci-archive:FILE docker://REGISTRY/NAME:TAG` pushes
   * them as one multi-platform tag. The manifest list `list` is made for it and removed after.
   */
  async saveMultiArchArchive(list: string, tags: readonly string[], file: string): Promise<void> {
    await this.#run(['manifest', 'rm', list]);
    await this.#ok(['manifest', 'create', list]);
    try {
      for (const tag of tags) await this.#ok(['manifest', 'add', list, `containers-storage:${tag}`]);
      await this.#ok(['manifest', 'push', '--all', list, `oci-archive:${file}`]);
    } finally {
      await this.#run(['manifest', 'rm', list]);
    }
  }

  /** load loads an image archive (OCI or docker) and returns the names podman says it loaded. */
  async load(file: string): Promise<string[]> {
    const out = await this.#ok(['load', '--input', file]);
    return [...out.matchAll(/^Loaded image(?:\(s\))?: *(.+)$/gm)].flatMap((m) => (m[1] ?? '').split(',').map((n) => n.trim())).filter((n) => n !== '');
  }

  /** runOnce runs a command in a new container to the end and returns its output; a non-zero exit throws. */
  async runOnce(image: string, flags: string[], args: string[]): Promise<string> {
    return this.#ok(['run', '--rm', '--network', 'host', ...this.#ulimits, ...flags, image, ...args]);
  }

  async #ok(args: string[]): Promise<string> {
    const { code, stdout, stderr } = await this.#run(args);
    if (code !== 0) throw new Error(`podman ${args.join(' ')}: exit ${code}\n${tail(stderr || stdout)}`);
    return stdout;
  }

  #run(args: string[], onOutput?: (chunk: string) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn('podman', [...this.#global, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        onOutput?.(d);
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        onOutput?.(d);
      });
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  }
}

/**
 * ulimits caps the containers' open files and processes at 4096, or lower if ours are lower. As
 * root, podman asks for 1,048,576 of each, which takes CAP_SYS_RESOURCE once that is above the
 * caller's hard limit, and root in these sandboxes lacks it: runc then fails with "error setting
 * rlimits". 4096 is far more than npm or the controller uses.
 */
async function ulimits(): Promise<string[]> {
  const limits = await readFile('/proc/self/limits', 'utf8');
  const hard = (name: string): number => {
    const value = new RegExp(`^${name}\\s+\\S+\\s+(\\S+)`, 'm').exec(limits)?.[1];
    return value === undefined || value === 'unlimited' ? Infinity : Number(value);
  };
  const nofile = Math.min(4096, hard('Max open files'));
  const nproc = Math.min(4096, hard('Max processes'));
  return ['--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', `nproc=${nproc}:${nproc}`];
}

async function onPath(command: string): Promise<boolean> {
  try {
    await exec('sh', ['-c', `command -v ${command}`]);
    return true;
  } catch {
    return false;
  }
}

function tail(text: string, lines = 40): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}
