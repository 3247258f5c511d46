// hpam_pending (hpam_frontend.h): the sends that could not go yet, one FIFO
// per front-end endpoint, and the list of endpoints with something queued.
// Intrusive (the items and queues live in the front end's descriptors and
// endpoints): pushing and draining never allocate.
#include "hpam_frontend.h"

namespace {

void list_append(hpam_pending_t* p, hpam_pending_queue_t* q) {
  q->prev = p->last;
  q->next = nullptr;
  if (p->last != nullptr) {
    p->last->next = q;
  } else {
    p->first = q;
  }
  p->last = q;
  q->listed = 1;
}

void list_remove(hpam_pending_t* p, hpam_pending_queue_t* q) {
  if (!q->listed) return;
  (q->prev != nullptr ? q->prev->next : p->first) = q->next;
  (q->next != nullptr ? q->next->prev : p->last) = q->prev;
  q->prev = q->next = nullptr;
  q->listed = 0;
}

hpam_pending_item_t* pop_head(hpam_pending_queue_t* q) {
  hpam_pending_item_t* item = q->head;
  q->head = item->next;
  if (q->head == nullptr) q->tail = nullptr;
  item->next = nullptr;
  return item;
}

void push_head(hpam_pending_queue_t* q, hpam_pending_item_t* item) {
  item->next = q->head;
  q->head = item;
  if (q->tail == nullptr) q->tail = item;
}

// One queue's turn: items in order until one must wait.
unsigned drain_queue(hpam_pending_queue_t* q, hpam_pending_send_fn send, void* ctx) {
  unsigned sent = 0;
  q->draining = 1;
  while (q->head != nullptr) {
    hpam_pending_item_t* item = pop_head(q);
    const int r = send(item, ctx);
    if (r == HPAM_PENDING_SENT) {
      ++sent;
      continue;
    }
    push_head(q, item);  // stays first
    if (r == HPAM_PENDING_PARTLY) ++sent;
    break;
  }
  q->draining = 0;
  return sent;
}

}  // namespace

extern "C" void hpam_pending_init(hpam_pending_t* p) {
  p->first = p->last = nullptr;
  p->pushed = 0;
}

extern "C" void hpam_pending_queue_init(hpam_pending_queue_t* q) {
  q->head = q->tail = nullptr;
  q->prev = q->next = nullptr;
  q->listed = 0;
  q->draining = 0;
}

extern "C" void hpam_pending_push(hpam_pending_t* p, hpam_pending_queue_t* q,
                                  hpam_pending_item_t* item) {
  item->next = nullptr;
  if (q->tail != nullptr) {
    q->tail->next = item;
  } else {
    q->head = item;
  }
  q->tail = item;
  p->pushed++;
  if (!q->listed) list_append(p, q);
}

extern "C" unsigned hpam_pending_drain(hpam_pending_t* p, hpam_pending_send_fn send, void* ctx) {
  unsigned sent = 0;
  hpam_pending_queue_t* q = p->first;
  while (q != nullptr) {
    hpam_pending_queue_t* next = q->next;  // a send may queue on other endpoints (appended)
    sent += drain_queue(q, send, ctx);
    if (q->head == nullptr) list_remove(p, q);
    q = next;
  }
  return sent;
}

extern "C" void hpam_pending_purge(hpam_pending_t* p, hpam_pending_queue_t* q,
                                   void (*drop)(hpam_pending_item_t*, void*), void* ctx) {
  while (q->head != nullptr) {
    hpam_pending_item_t* item = pop_head(q);
    if (drop != nullptr) drop(item, ctx);
  }
  list_remove(p, q);
}
