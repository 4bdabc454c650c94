// Loads the page; if one of its files is missing (uPlot is copied in at setup: `make web`),
// says so instead of leaving a page that silently does nothing.
import('./app.js').catch((error) => {
  const message = document.querySelector('#error');
  message.textContent = `The page could not load all its files (${error.message}). `
    + 'An operator runs `make setup` (scripts/install-web.sh) to install them.';
  document.querySelector('#sign-in').hidden = true;
});
