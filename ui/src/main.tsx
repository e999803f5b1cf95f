/** Entry: takes the token from the URL fragment, opens the event stream, renders the shell. */
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { configure } from './api/client';
import { takeToken } from './api/token';
import { connect } from './api/events';
import { applyTheme, loadTheme } from './lib/theme';
import { App } from './App';
import '@xyflow/react/dist/style.css';
import 'uplot/dist/uPlot.min.css';
import 'react-json-view-lite/dist/index.css';
import './styles.css';

applyTheme(loadTheme());
configure(takeToken());
connect();

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
