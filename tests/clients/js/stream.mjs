// masto.js's WebSocket stream (the token in Sec-WebSocket-Protocol): bob subscribes to
// `user`; alice, whom he follows, posts until one of her statuses arrives as an
// `update` (the subscription is live only once the server has read it, which a client
// cannot see: so she posts again every half second until one shows, at most 60 times);
// then she follows him, which must arrive as a `notification` of type follow.
import { createStreamingAPIClient } from "masto";
import { check, passed, signedIn } from "./common.mjs";

const alice = await signedIn("alice");
const bob = await signedIn("bob");
await bob.rest.v1.accounts.$select(alice.id).follow();

const instance = await bob.rest.v1.instance.fetch();
check(instance.urls.streamingApi.startsWith("ws"), "v1 instance names a ws streaming URL", instance.urls);
const streaming = createStreamingAPIClient({
  streamingApiUrl: instance.urls.streamingApi,
  accessToken: bob.token.accessToken,
  retry: 3,
});
const subscription = streaming.user.subscribe();

const posted = new Set();
let updated = false;
const posting = (async () => {
  for (let n = 0; n < 60 && !updated; n++) {
    const status = await alice.rest.v1.statuses.create({ status: `streamed to bob ${n}` });
    posted.add(status.id);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  check(updated, "one of 60 posts by alice arrived on bob's stream");
  await alice.rest.v1.accounts.$select(bob.id).follow();
})();

for await (const event of subscription) {
  console.log(`event ${event.event} on ${JSON.stringify(event.stream)}`);
  check(Array.isArray(event.stream) && event.stream.includes("user"), "the event names the user stream", event.stream);
  if (event.event === "update") {
    check(posted.has(event.payload.id) && event.payload.account.id === alice.id, "an update is alice's post", event.payload);
    updated = true;
  } else if (event.event === "notification") {
    check(updated, "the notification comes after the updates");
    check(event.payload.type === "follow" && event.payload.account.id === alice.id, "alice's follow", event.payload);
    break;
  }
}
await posting;
subscription.unsubscribe();
streaming.close();
passed("masto.js WebSocket stream: update and notification");
