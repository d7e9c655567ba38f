// The Node.js http server of the instruction counts (http_instructions.sh, agent_profile.sh):
// 600-byte responses. node node_server.js PORT [PORT_FILE]: PORT 0 takes a free one, written
// to PORT_FILE once it listens. Ends on SIGTERM or SIGQUIT after closing the server.
const http = require('http');
const body = Buffer.alloc(600, 'a');
const server = http.createServer((req, res) => { res.setHeader('Content-Type', 'text/plain'); res.end(body); });
server.listen(Number(process.argv[2]), '127.0.0.1', () => {
    if (process.argv[3]) require('fs').writeFileSync(process.argv[3], String(server.address().port));
});
for (const sig of ['SIGTERM', 'SIGQUIT']) process.on(sig, () => server.close(() => process.exit(0)));
