// Preloaded into Node-based test peers (node --require ./loopback-only.cjs …).
// Peers such as @modelcontextprotocol/server-everything bind every interface and only
// honour PORT; this forces every TCP listen onto 127.0.0.1 so nothing a test starts is
// reachable from outside the machine, and reports the real port (PORT=0 picks a free
// one) on stderr as `SWITCHBOARD_LISTENING 127.0.0.1:PORT`.
'use strict';
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function patchedListen(...args) {
  const first = args[0];
  if (first !== null && typeof first === 'object' && !Array.isArray(first)) {
    if (first.path === undefined) args[0] = { ...first, host: '127.0.0.1' };
  } else if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    const rest = args.slice(1);
    if (typeof rest[0] === 'string') rest.shift();
    args = [Number(first), '127.0.0.1', ...rest];
  } else if (typeof first === 'function' || first === undefined) {
    args = [0, '127.0.0.1', ...args];
  }
  this.once('listening', () => {
    const a = this.address();
    if (a && typeof a === 'object') process.stderr.write(`SWITCHBOARD_LISTENING ${a.address}:${a.port}\n`);
  });
  return listen.apply(this, args);
};
