/** A readable tree of a JSON Schema's properties: name, type, required, description, nested objects and arrays. */
type S = {
  type?: string | string[];
  properties?: Record<string, S>;
  required?: string[];
  items?: S;
  description?: string;
  enum?: unknown[];
  const?: unknown;
  $ref?: string;
  anyOf?: S[];
  oneOf?: S[];
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
};

export function typeOf(s: S | undefined): string {
  if (!s) return 'any';
  if (s.$ref) return `→ ${s.$ref}`;
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf || s.oneOf) return (s.anyOf ?? s.oneOf ?? []).map(typeOf).join(' | ');
  const t = Array.isArray(s.type) ? s.type.join(' | ') : s.type;
  if (t === 'array') return `${typeOf(s.items)}[]`;
  return (t ?? (s.properties ? 'object' : 'any')) + (s.format ? ` (${s.format})` : '');
}

function Props({ schema, depth }: { schema: S; depth: number }) {
  const props = schema.properties ?? {};
  const req = new Set(schema.required ?? []);
  const names = Object.keys(props);
  if (names.length === 0) return null;
  return (
    <ul>
      {names.map((n) => {
        const p = props[n] ?? {};
        const child = p.type === 'array' ? p.items : p;
        return (
          <li key={n}>
            <span className="pname">{n}</span>
            <span className="ptype">{typeOf(p)}</span>
            {req.has(n) && <span className="req">required</span>}
            {p.default !== undefined && <span className="faint"> = {JSON.stringify(p.default)}</span>}
            {p.description && <span className="pdesc">{p.description}</span>}
            {child && depth < 6 && <Props schema={child} depth={depth + 1} />}
          </li>
        );
      })}
    </ul>
  );
}

export function SchemaTree({ schema }: { schema: unknown }) {
  const s = (schema ?? {}) as S;
  if (!s.properties || Object.keys(s.properties).length === 0) {
    return <div className="schema faint">no arguments ({typeOf(s)})</div>;
  }
  return (
    <div className="schema" data-testid="schema-tree">
      <Props schema={s} depth={0} />
    </div>
  );
}
