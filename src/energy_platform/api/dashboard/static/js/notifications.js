// The notification list: newest first, read/unread and archive/unarchive per notification.

import { formatTime } from './time.js';

const KEPT_TAGS = new Set(['P', 'BR', 'B', 'STRONG', 'I', 'EM', 'UL', 'OL', 'LI', 'SPAN', 'CODE', 'SMALL']);

/**
 * Notification content is HTML whose inserted values the platform escapes. A client still
 * keeps only plain formatting: text and the tags above, without attributes.
 */
export function safeContent(html) {
  const source = new DOMParser().parseFromString(html, 'text/html').body;
  const copy = (from, to) => {
    for (const node of from.childNodes) {
      if (node.nodeType === Node.TEXT_NODE) to.append(node.textContent);
      else if (node.nodeType === Node.ELEMENT_NODE) {
        if (KEPT_TAGS.has(node.tagName)) copy(node, to.appendChild(document.createElement(node.tagName)));
        else copy(node, to);
      }
    }
    return to;
  };
  return copy(source, document.createElement('div'));
}

/** Renders `items` into `list`; `act(id, flags)` is called by the buttons. */
export function renderNotifications(list, items, { showArchived, zone, act }) {
  list.replaceChildren();
  const shown = items.filter((n) => showArchived || !n.archived);
  if (!shown.length) {
    const empty = document.createElement('li');
    empty.className = 'muted';
    empty.textContent = 'No notifications.';
    list.append(empty);
    return;
  }
  for (const n of shown) {
    const item = document.createElement('li');
    item.dataset.notification = n.id;
    item.classList.toggle('unread', !n.read);
    item.classList.toggle('archived', n.archived);
    const title = document.createElement('div');
    title.className = 'title';
    title.textContent = n.title;
    const meta = document.createElement('div');
    meta.className = 'meta';
    meta.textContent = `${n.feed_title} · ${formatTime(zone, n.created_at)}`;
    const content = safeContent(n.content);
    content.className = 'content';
    const actions = document.createElement('div');
    actions.className = 'actions';
    actions.append(
      button(n.read ? 'Mark unread' : 'Mark read', n.read ? 'unread' : 'read', () => act(n.id, { read: !n.read })),
      button(n.archived ? 'Unarchive' : 'Archive', n.archived ? 'unarchive' : 'archive',
        () => act(n.id, { archived: !n.archived })),
    );
    item.append(title, meta, content, actions);
    list.append(item);
  }
}

function button(text, action, onClick) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  b.dataset.action = action;
  b.addEventListener('click', onClick);
  return b;
}
