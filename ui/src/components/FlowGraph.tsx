/** The flow graph (@xyflow/react, laid out with dagre) with live node states and durations. */
import { useMemo } from 'react';
import { ReactFlow, Background, Handle, Position, type Edge, type Node, type NodeProps } from '@xyflow/react';
import dagre from '@dagrejs/dagre';
import type { FlowGraph as Graph } from '../api/types';
import type { NodeStatus } from '../lib/thermal';
import { duration } from '../lib/format';

export interface NodeView {
  status: NodeStatus;
  duration_ms: number | null;
  message: string | null;
}

type FlowNodeData = { id: string; tool: string; view: NodeView };

function FlowNodeBox({ data }: NodeProps<Node<FlowNodeData>>) {
  const v = data.view;
  return (
    <div className={`flownode n-${v.status}`} data-testid={`flow-node-${data.id}`} data-status={v.status}>
      <Handle type="target" position={Position.Left} />
      <div className="t"><span>{data.id}</span><span className={`pill st-${v.status}`}>{v.status}</span></div>
      <div className="m">{data.tool}</div>
      <div className="m clip" title={v.message ?? undefined}>{v.duration_ms !== null ? duration(v.duration_ms) : '—'}{v.message ? ` · ${v.message}` : ''}</div>
      <Handle type="source" position={Position.Right} />
    </div>
  );
}

const nodeTypes = { step: FlowNodeBox };

export function layout(graph: Graph): Record<string, { x: number; y: number }> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'LR', nodesep: 30, ranksep: 60 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) g.setNode(n.id, { width: 200, height: 70 });
  for (const e of graph.edges) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const out: Record<string, { x: number; y: number }> = {};
  for (const n of graph.nodes) {
    const p = g.node(n.id) as { x: number; y: number } | undefined;
    out[n.id] = { x: (p?.x ?? 0) - 100, y: (p?.y ?? 0) - 35 };
  }
  return out;
}

export function FlowGraph({ graph, views }: { graph: Graph; views: Record<string, NodeView> }) {
  const pos = useMemo(() => layout(graph), [graph]);
  const nodes: Node<FlowNodeData>[] = graph.nodes.map((n) => ({
    id: n.id,
    type: 'step',
    position: pos[n.id] ?? { x: 0, y: 0 },
    data: { id: n.id, tool: n.resolved_tool ?? n.tool ?? (n.capability ? `capability ${n.capability}` : '—'), view: views[n.id] ?? { status: 'pending', duration_ms: null, message: null } },
    draggable: false,
  }));
  const edges: Edge[] = graph.edges.map((e, i) => ({
    id: `e${i}`,
    source: e.from,
    target: e.to,
    label: e.when ?? undefined,
    animated: views[e.from]?.status === 'done' && views[e.to]?.status === 'running',
  }));
  return (
    <div style={{ height: 150 }} data-testid="flow-graph">
      <ReactFlow nodes={nodes} edges={edges} nodeTypes={nodeTypes} fitView fitViewOptions={{ padding: 0.15 }} nodesConnectable={false} proOptions={{ hideAttribution: true }} panOnDrag={false} zoomOnScroll={false} preventScrolling={false}>
        <Background gap={16} size={1} />
      </ReactFlow>
    </div>
  );
}
