// masto.js posts and reads the home timeline: bob follows alice, alice posts five
// statuses (one a reply), bob walks his home timeline two at a time through masto's
// paginator (Link rel="next"), and sees exactly those, newest first, once each.
import { check, eventually, passed, signedIn } from "./common.mjs";

const alice = await signedIn("alice");
const bob = await signedIn("bob");
const relationship = await bob.rest.v1.accounts.$select(alice.id).follow();
check(relationship.following === true, "bob follows alice", relationship);

const posted = [];
for (let n = 0; n < 5; n++) {
  const status = await alice.rest.v1.statuses.create({
    status: `post ${n} from masto <b>#mastocheck</b>`,
    inReplyToId: n === 4 ? posted[0].id : undefined,
  });
  check(status.account.id === alice.id && status.content.includes(`post ${n}`), "the status is alice's", status);
  posted.push(status);
}
check(posted[4].inReplyToId === posted[0].id, "the reply answers the first post", posted[4]);
check(!posted[0].content.includes("<b>"), "the text is escaped in content", posted[0].content);

const expected = posted.map((status) => status.id).reverse();
await eventually(
  () => bob.rest.v1.timelines.home.list({ limit: 1 }),
  (page) => page.length === 1 && page[0].id === expected[0],
  "alice's newest post reaches bob's home",
);
const seen = [];
let pages = 0;
for await (const page of bob.rest.v1.timelines.home.list({ limit: 2 })) {
  pages++;
  check(page.length <= 2, "a page holds at most the limit", page.length);
  seen.push(...page.map((status) => status.id));
  if (pages > 10) break;
}
check(JSON.stringify(seen) === JSON.stringify(expected), "bob's walk is alice's posts newest first", { seen, expected });
check(pages >= 3, "the walk took several pages", pages);

const fetched = await bob.rest.v1.statuses.$select(posted[1].id).fetch();
check(fetched.id === posted[1].id, "a status fetched by id", fetched);

passed("masto.js post and home timeline");
