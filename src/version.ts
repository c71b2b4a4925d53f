// VERSION is the product's version, from package.json (build_info, logs, the User-Agent).
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
