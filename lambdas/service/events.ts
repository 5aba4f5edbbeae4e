import { type EventKind, type ResourceEvent, recentEvents, type StoredEvent } from '../domain/events';
import { logger } from '../shared/logger';
import type { Dependencies } from '.';

/**
 * Events of models and computes (domain/events.ts). Recorded after the decision they tell of has committed; a
 * failure to record one is logged and dropped, never the decision's failure: events tell people what happened,
 * the decision itself is in the admission and compute records. Read by the resource's route, after that route
 * has decided the caller may see the resource.
 */
export function eventService(deps: Dependencies) {
  const store = deps.store.events;
  return {
    async record(events: readonly ResourceEvent[]): Promise<void> {
      if (!events.length) return;
      try {
        await store.recordEvents(events);
      } catch (e) {
        logger.warn('events not recorded', { error: e as Error, events: events.length });
      }
    },

    /** The recent events of the resource stored under `key` and created at `createdAt`, newest first. */
    async of(kind: EventKind, key: string, createdAt: string): Promise<StoredEvent[]> {
      return recentEvents(await store.listEvents(kind, key, deps.clock().getTime()), createdAt);
    },
  };
}

export type EventService = ReturnType<typeof eventService>;
