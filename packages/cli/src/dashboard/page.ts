/**
 * The dashboard's one page: HTML with its CSS and script inline (no external asset, no CDN), under a
 * Content-Security-Policy nonce. The script and the style live in page/dashboard.js and page/dashboard.css, built
 * in as text by build/page.mjs; the settings the script needs (the secret it sends back, where the store is) are a
 * JSON element, never code.
 */
import { script, style } from 'virtual:sluice-dashboard-page';

export interface PageOptions {
  nonce: string;
  /** Sent back in X-Sluice-Token with every request. */
  secret: string;
  where: string;
}

export function renderPage({ nonce, secret, where }: PageOptions): string {
  // JSON in an HTML element: `<` escaped, so no text from the store can close it.
  const settings = JSON.stringify({ secret, where }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>sluice dashboard</title>
<style nonce="${nonce}">${style}</style>
</head>
<body>
<header>
  <h1>sluice dashboard</h1>
  <span id="where"></span>
  <span id="clock"></span>
</header>
<div id="banner" class="banner" hidden></div>
<main>
  <form id="add-name" class="add-name">
    <label>Show a limiter by name <input name="name" placeholder="api" autocomplete="off" required></label>
    <button type="submit">Show</button>
    <span id="names-note" class="note"></span>
  </form>
  <div id="limiters"></div>
</main>
<script type="application/json" id="settings">${settings}</script>
<script nonce="${nonce}">${script}</script>
</body>
</html>
`;
}
