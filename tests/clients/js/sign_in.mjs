// masto.js signs in: an app through masto (JSON), a token from the password grant and
// one from client_credentials (createOAuthAPIClient), verifyCredentials for each, and
// a wrong password refused with the server's {error} read by masto as an error.
import { createOAuthAPIClient, createRestAPIClient } from "masto";
import { BASE, SCOPES, app, check, passed, signedIn } from "./common.mjs";

const { id, token, rest } = await signedIn("masto");
check(token.accessToken.length === 64, "the password grant answers an OAuth token", token);
check(token.tokenType === "Bearer" && token.scope === SCOPES, "the token's type and scope", token);
const me = await rest.v1.accounts.verifyCredentials();
check(me.username === id && me.acct === id && me.id === id, `verifyCredentials names ${id}`, me);

const client = await app();
const oauth = createOAuthAPIClient({ url: BASE });
const appToken = await oauth.token.create({
  grantType: "client_credentials",
  clientId: client.clientId,
  clientSecret: client.clientSecret,
  redirectUri: "urn:ietf:wg:oauth:2.0:oob",
  scope: "read",
});
const asApp = createRestAPIClient({ url: BASE, accessToken: appToken.accessToken });
const verified = await asApp.v1.apps.verifyCredentials();
check(verified.name === "masto.js test", "apps.verifyCredentials names the app", verified);

let refused;
try {
  await oauth.token.create({
    grantType: "password",
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    redirectUri: "urn:ietf:wg:oauth:2.0:oob",
    username: id,
    password: "not the password",
    scope: SCOPES,
  });
} catch (error) {
  refused = error;
}
check(refused && refused.statusCode === 400, "a wrong password is a 400 masto reads", String(refused));
console.log(`wrong password refused: ${refused.message}`);

const instance = await rest.v2.instance.fetch();
check(instance.configuration.urls.streaming.startsWith("ws"), "v2 instance names a ws streaming URL", instance.configuration);

passed("masto.js sign-in");
