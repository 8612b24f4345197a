using System.Net;
using Microsoft.AspNetCore.Authentication;
using Microsoft.AspNetCore.Authorization;
using Microsoft.AspNetCore.Authorization.Policy;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.Extensions.Logging;

namespace BoundedWork.AspNetCore.Tests;

public sealed class SecurityTests
{
    public static TheoryData<string, string> Endpoints => new()
    {
        { "GET", "/bounded-work/" },
        { "GET", "/bounded-work/executors" },
        { "GET", "/bounded-work/executors/payments" },
        { "GET", "/bounded-work/threadpool" },
        { "PUT", "/bounded-work/executors/payments/workers" },
        { "PATCH", "/bounded-work/executors/payments" },
        { "DELETE", "/bounded-work/executors/payments" },
    };

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Endpoint_Anonymous_Returns401AndChangesNothing(string method, string path)
    {
        await using var server = await AdminServer.StartAsync();
        using var anonymous = server.CreateClient(user: null, roles: null);
        var before = server.Payments.Settings;

        using var response = await anonymous.SendChangeAsync(new HttpMethod(method), path, method == "GET" ? null : """{"workers": 5}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.Unauthorized, "Unauthorized");
        Assert.Contains("sign in", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Equal("TestHeaders", response.Headers.WwwAuthenticate.Single().Scheme); // the scheme's own challenge still runs
        Assert.Equal("nosniff", response.Headers.GetValues("X-Content-Type-Options").Single());
        Assert.Equal(before, server.Payments.Settings);
    }

    [Theory]
    [MemberData(nameof(Endpoints))]
    public async Task Endpoint_AuthenticatedWithoutPolicy_Returns403AndChangesNothing(string method, string path)
    {
        await using var server = await AdminServer.StartAsync();
        using var visitor = server.CreateClient("mallory", "sales");
        var before = server.Payments.Settings;

        using var response = await visitor.SendChangeAsync(new HttpMethod(method), path, method == "GET" ? null : """{"workers": 5}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.Forbidden, "Forbidden");
        Assert.Contains("'BoundedWorkAdmin'", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Equal("nosniff", response.Headers.GetValues("X-Content-Type-Options").Single());
        Assert.Equal(before, server.Payments.Settings);
    }

    [Fact]
    public async Task Refusal_AppRegisteredItsOwnResultHandler_ItStillRunsAndTheBodyIsAProblem()
    {
        await using var server = await AdminServer.StartAsync(authentication: services =>
        {
            services.AddAuthentication(HeaderAuthenticationHandler.SchemeName)
                .AddScheme<Microsoft.AspNetCore.Authentication.AuthenticationSchemeOptions, HeaderAuthenticationHandler>(HeaderAuthenticationHandler.SchemeName, null);
            services.AddSingleton<IAuthorizationMiddlewareResultHandler, StampingResultHandler>();
        });
        using var visitor = server.CreateClient("mallory", "sales");

        using var response = await visitor.GetAsync("/bounded-work/executors");

        await AdminApiTests.AssertProblem(response, HttpStatusCode.Forbidden, "Forbidden");
        Assert.Equal("1", response.Headers.GetValues(StampingResultHandler.Header).Single());
    }

    [Fact]
    public async Task Refusal_OnAnEndpointOfTheApp_IsLeftAsTheAppAnswersIt()
    {
        await using var server = await AdminServer.StartAsync(map: app => app.MapGet("/app-only", () => "ok").RequireAuthorization("BoundedWorkAdmin"));
        using var anonymous = server.CreateClient(user: null, roles: null);

        using var response = await anonymous.GetAsync("/app-only");

        Assert.Equal(HttpStatusCode.Unauthorized, response.StatusCode);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Refusal_CookieSchemeRedirectsToItsLoginPage_LeftAsItIs()
    {
        await using var server = await AdminServer.StartAsync(authentication: services => services.AddAuthentication("Cookies").AddCookie("Cookies"));
        using var client = new HttpClient(new HttpClientHandler { AllowAutoRedirect = false }) { BaseAddress = server.BaseAddress };

        using var response = await client.GetAsync("/bounded-work/executors");

        Assert.Equal(HttpStatusCode.Redirect, response.StatusCode);
        Assert.Contains("/Account/Login", response.Headers.Location?.ToString(), StringComparison.Ordinal);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    private sealed class StampingResultHandler : IAuthorizationMiddlewareResultHandler
    {
        public const string Header = "X-App-Result-Handler";
        private readonly AuthorizationMiddlewareResultHandler _default = new();

        public Task HandleAsync(RequestDelegate next, HttpContext context, AuthorizationPolicy policy, PolicyAuthorizationResult authorizeResult)
        {
            context.Response.Headers[Header] = "1";
            return _default.HandleAsync(next, context, policy, authorizeResult);
        }
    }

    [Fact]
    public async Task Start_NoPolicyRegistered_FailsNamingPolicyAndFix()
    {
        await using var app = AdminServer.Build(new FakeLogCollector(), addPolicy: false);

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("'BoundedWorkAdmin'", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddPolicy(\"BoundedWorkAdmin\"", error.Message, StringComparison.Ordinal);
        Assert.Contains("AllowAnonymousAdmin()", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_AuthenticationWithoutAnyScheme_FailsNamingTheFix()
    {
        // The package README's first snippet as it was: AddAuthentication() and nothing else.
        await using var app = AdminServer.Build(new FakeLogCollector(), authentication: services => services.AddAuthentication());

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("'/bounded-work'", error.Message, StringComparison.Ordinal);
        Assert.Contains("default authentication scheme", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddAuthentication(\"", error.Message, StringComparison.Ordinal);
        Assert.Contains("AddAuthenticationSchemes(", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_TwoSchemesNeitherDefault_FailsNamingTheFixAndTheSchemes()
    {
        await using var app = AdminServer.Build(new FakeLogCollector(), authentication: services => services.AddAuthentication()
            .AddScheme<AuthenticationSchemeOptions, HeaderAuthenticationHandler>(HeaderAuthenticationHandler.SchemeName, null)
            .AddScheme<AuthenticationSchemeOptions, HeaderAuthenticationHandler>("Other", null));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("default authentication scheme", error.Message, StringComparison.Ordinal);
        Assert.Contains("'TestHeaders', 'Other'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_NoAuthenticationServices_FailsNamingAddAuthentication()
    {
        // Authorization alone: a challenge would need IAuthenticationService, so every refusal would be a 500.
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Services.AddBoundedExecutor("payments");
        builder.Services.AddBoundedWorkAdmin();
        builder.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.RequireRole("ops")));
        await using var app = builder.Build();
        app.UseAuthorization();
        app.MapBoundedWorkAdmin();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("AddAuthentication(\"", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_PolicyNamesAnUnregisteredScheme_FailsNamingIt()
    {
        await using var app = AdminServer.Build(new FakeLogCollector(), addPolicy: false, configure: b =>
            b.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.AddAuthenticationSchemes("Missing").RequireRole("ops"))));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("'Missing'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_NoDefaultSchemeButPolicyNamesOne_StartsAndAnswers401And403()
    {
        await using var server = await AdminServer.StartAsync(configure: b =>
        {
            b.Services.AddAuthentication().AddScheme<AuthenticationSchemeOptions, HeaderAuthenticationHandler>("Other", null);
            b.Services.Configure<AuthenticationOptions>(o => o.DefaultScheme = null);
            b.Services.AddAuthorization(o => o.AddPolicy("BoundedWorkAdmin", p => p.AddAuthenticationSchemes(HeaderAuthenticationHandler.SchemeName).RequireRole("ops")));
        });
        using var anonymous = server.CreateClient(user: null, roles: null);
        using var visitor = server.CreateClient("mallory", "sales");

        Assert.Equal(HttpStatusCode.Unauthorized, (await anonymous.GetAsync("/bounded-work/executors")).StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, (await visitor.GetAsync("/bounded-work/executors")).StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await server.Client.GetAsync("/bounded-work/executors")).StatusCode);
    }

    [Fact]
    public async Task Start_CustomPolicyNameMissing_FailsNamingIt()
    {
        await using var app = AdminServer.Build(new FakeLogCollector(), configure: b => b.Services.AddBoundedWorkAdmin(o => o.AuthorizationPolicy = "Operators"));

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("'Operators'", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_CustomPolicyRegistered_UsesIt()
    {
        await using var server = await AdminServer.StartAsync(configure: b =>
        {
            b.Services.AddBoundedWorkAdmin(o => o.AuthorizationPolicy = "Operators");
            b.Services.AddAuthorization(o => o.AddPolicy("Operators", p => p.RequireUserName("bob")));
        });
        using var bob = server.CreateClient("bob", null);

        Assert.Equal(HttpStatusCode.OK, (await bob.GetAsync("/bounded-work/executors")).StatusCode);
        Assert.Equal(HttpStatusCode.Forbidden, (await server.Client.GetAsync("/bounded-work/executors")).StatusCode);
    }

    [Fact]
    public async Task Start_NoPolicyButAnonymousOptIn_StartsAndWarns()
    {
        var logs = new FakeLogCollector();
        await using var app = AdminServer.Build(logs, anonymous: true, addPolicy: false);

        await app.StartAsync();

        var warning = Assert.Single(logs.WithEvent("AnonymousAdminAccess"));
        Assert.Equal(202, warning.Id.Id);
        Assert.Equal(LogLevel.Warning, warning.Level);
        Assert.Equal("/bounded-work", warning.GetStructuredStateValue("Prefix"));
        await app.StopAsync();
    }

    [Fact]
    public async Task AnonymousOptIn_AnonymousCaller_CanReadAndChange()
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        using var anonymous = server.CreateClient(user: null, roles: null);

        using var list = await anonymous.GetAsync("/bounded-work/executors");
        using var put = await anonymous.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 5}""");

        Assert.Equal(HttpStatusCode.OK, list.StatusCode);
        Assert.Equal(HttpStatusCode.OK, put.StatusCode);
        Assert.Equal(5, server.Payments.Settings.WorkerCount);
        Assert.Equal("anonymous", Assert.Single(server.Logs.WithEvent("SettingsChanged")).GetStructuredStateValue("User"));
    }

    [Fact]
    public async Task AnonymousOptIn_CrossSiteRequestsStillRefused()
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        using var anonymous = server.CreateClient(user: null, roles: null);

        using var form = await anonymous.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", "workers=5", "application/x-www-form-urlencoded", header: false);
        using var noHeader = await anonymous.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", """{"workers": 5}""", header: false);

        Assert.Equal(HttpStatusCode.UnsupportedMediaType, form.StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, noHeader.StatusCode);
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
    }

    [Theory]
    [InlineData("evil.example", "http://evil.example", "not_loopback_host")]      // DNS rebinding: same origin to the browser
    [InlineData("evil.example:$PORT", null, "not_loopback_host")]
    [InlineData("127.0.0.1.evil.example", null, "not_loopback_host")]
    [InlineData("localhost.evil.example:$PORT", null, "not_loopback_host")]
    [InlineData("localhost.", null, "not_loopback_host")]
    [InlineData("192.168.1.10:$PORT", null, "not_loopback_host")]
    [InlineData("0.0.0.0:$PORT", null, "not_loopback_host")]
    [InlineData("127.0.0.1:$PORT", "http://evil.example", "cross_origin")]
    [InlineData("localhost:$PORT", "http://localhost:1", "cross_origin")]
    [InlineData("localhost:$PORT", "https://localhost:$PORT", "cross_origin")]
    [InlineData("localhost:$PORT", "null", "cross_origin")]
    public async Task AnonymousOptIn_ChangeForAForeignHostOrFromAnotherOrigin_Refused403(string host, string? origin, string reason)
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        using var anonymous = server.CreateClient(user: null, roles: null);
        var port = server.BaseAddress.Port.ToString(System.Globalization.CultureInfo.InvariantCulture);

        using var put = await SendWithHostAndOrigin(anonymous, HttpMethod.Put, "/bounded-work/executors/payments/workers", host.Replace("$PORT", port, StringComparison.Ordinal), origin?.Replace("$PORT", port, StringComparison.Ordinal));
        using var patch = await SendWithHostAndOrigin(anonymous, HttpMethod.Patch, "/bounded-work/executors/payments", host.Replace("$PORT", port, StringComparison.Ordinal), origin?.Replace("$PORT", port, StringComparison.Ordinal));

        var problem = await AdminApiTests.AssertProblem(put, HttpStatusCode.Forbidden, "AllowAnonymousAdmin");
        await AdminApiTests.AssertProblem(patch, HttpStatusCode.Forbidden, "AllowAnonymousAdmin");
        Assert.Contains("localhost", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
        Assert.All(server.Logs.WithEvent("SettingsChangeRefused"), entry => Assert.Equal(reason, entry.GetStructuredStateValue("Reason")));
        Assert.Equal(2, server.Logs.WithEvent("SettingsChangeRefused").Count);
    }

    [Theory]
    [InlineData("127.0.0.1:$PORT", null)]
    [InlineData("127.0.0.1:$PORT", "http://127.0.0.1:$PORT")]
    [InlineData("localhost:$PORT", "http://localhost:$PORT")]
    [InlineData("LOCALHOST:$PORT", "http://localhost:$PORT")]
    [InlineData("app.localhost:$PORT", "http://app.localhost:$PORT")]
    [InlineData("127.8.9.10", null)]
    [InlineData("[::1]:$PORT", "http://[::1]:$PORT")]
    public async Task AnonymousOptIn_ChangeForALoopbackHostFromItsOwnOrigin_Applies(string host, string? origin)
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        using var anonymous = server.CreateClient(user: null, roles: null);
        var port = server.BaseAddress.Port.ToString(System.Globalization.CultureInfo.InvariantCulture);

        using var put = await SendWithHostAndOrigin(anonymous, HttpMethod.Put, "/bounded-work/executors/payments/workers", host.Replace("$PORT", port, StringComparison.Ordinal), origin?.Replace("$PORT", port, StringComparison.Ordinal));

        Assert.Equal(HttpStatusCode.OK, put.StatusCode);
        Assert.Equal(5, server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task AnonymousOptIn_ReadForAForeignHost_StillAnswers()
    {
        await using var server = await AdminServer.StartAsync(anonymous: true);
        using var anonymous = server.CreateClient(user: null, roles: null);

        using var get = await SendWithHostAndOrigin(anonymous, HttpMethod.Get, "/bounded-work/executors", "evil.example", "http://evil.example");

        Assert.Equal(HttpStatusCode.OK, get.StatusCode);
    }

    [Fact]
    public async Task Protected_ChangeForAnyHost_AppliesForAnOperator()
    {
        // Behind authorization the host is the app's business (a real name behind a proxy); only anonymous mode checks it.
        await using var server = await AdminServer.StartAsync();

        using var put = await SendWithHostAndOrigin(server.Client, HttpMethod.Put, "/bounded-work/executors/payments/workers", "ops.example.com", "https://ops.example.com");

        Assert.Equal(HttpStatusCode.OK, put.StatusCode);
        Assert.Equal(5, server.Payments.Settings.WorkerCount);
    }

    private static Task<HttpResponseMessage> SendWithHostAndOrigin(HttpClient client, HttpMethod method, string path, string host, string? origin)
    {
        var request = new HttpRequestMessage(method, path);
        request.Headers.Host = host;
        if (origin is not null)
        {
            request.Headers.Add("Origin", origin);
        }

        if (method != HttpMethod.Get)
        {
            request.Content = new StringContent("""{"workers": 5}""", System.Text.Encoding.UTF8, "application/json");
            request.Headers.Add(TestKit.AdminHeader, "1");
        }

        return client.SendAsync(request);
    }

    [Theory]
    [InlineData("application/x-www-form-urlencoded", "workers=7")]
    [InlineData("multipart/form-data; boundary=b", "--b\r\nContent-Disposition: form-data; name=\"workers\"\r\n\r\n7\r\n--b--")]
    [InlineData("text/plain", """{"workers": 7}""")]
    public async Task Change_CrossSiteFormOrSimpleRequest_RefusedWith415(string contentType, string body)
    {
        // What a page on another site can make a signed-in operator's browser send without a CORS preflight: a form
        // post or a "simple" fetch (one of these three content types, no custom headers). The browser would attach the
        // operator's cookie; here the operator is authenticated by header to the same effect.
        await using var server = await AdminServer.StartAsync();

        using var put = await server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/payments/workers", body, contentType, header: false);
        using var post = await server.Client.SendChangeAsync(HttpMethod.Post, "/bounded-work/executors/payments/workers", body, contentType, header: false);

        Assert.Equal(HttpStatusCode.UnsupportedMediaType, put.StatusCode);
        Assert.Equal(HttpStatusCode.MethodNotAllowed, post.StatusCode);
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task Change_JsonWithoutRequestHeader_Returns400NamingHeader()
    {
        await using var server = await AdminServer.StartAsync();

        using var response = await server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/payments", """{"workers": 7}""", header: false);

        await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "X-BoundedWork-Admin");
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task Get_WithQueryString_NeverChangesAnything()
    {
        await using var server = await AdminServer.StartAsync();

        using var response = await server.Client.GetAsync("/bounded-work/executors/payments?workers=7");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(2, server.Payments.Settings.WorkerCount);
    }

    [Fact]
    public async Task Map_WithoutAdminServices_ThrowsNamingAddBoundedWorkAdmin()
    {
        var error = Assert.Throws<InvalidOperationException>(() => AdminServer.Build(new FakeLogCollector(), addAdmin: false));

        Assert.Contains("AddBoundedWorkAdmin()", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Map_WithoutExecutors_ThrowsNamingAddBoundedExecutor()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.Services.AddBoundedWorkAdmin();

        var error = Assert.Throws<InvalidOperationException>(() => builder.Build().MapBoundedWorkAdmin());

        Assert.Contains("AddBoundedExecutor(", error.Message, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("", 5, "AuthorizationPolicy")]
    [InlineData("BoundedWorkAdmin", 0.5, "History")]
    [InlineData("BoundedWorkAdmin", 61, "History")]
    public void Map_InvalidAdminOptions_ThrowsNamingTheSettingOnce(string policy, double historyMinutes, string setting)
    {
        var error = Assert.Throws<Microsoft.Extensions.Options.OptionsValidationException>(() => AdminServer.Build(
            new FakeLogCollector(),
            configure: b => b.Services.AddBoundedWorkAdmin(o =>
            {
                o.AuthorizationPolicy = policy;
                o.History = TimeSpan.FromMinutes(historyMinutes);
            })));

        Assert.StartsWith($"BoundedWorkAdminOptions.{setting} must", Assert.Single(error.Failures), StringComparison.Ordinal);
    }

    [Fact]
    public async Task Start_AdminWithoutExecutors_FailsNamingAddBoundedExecutor()
    {
        var builder = WebApplication.CreateSlimBuilder();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        builder.Services.AddBoundedWorkAdmin();
        await using var app = builder.Build();

        var error = await Assert.ThrowsAsync<InvalidOperationException>(() => app.StartAsync());

        Assert.Contains("AddBoundedExecutor(", error.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task Map_ChainedConventions_ApplyToEveryEndpoint()
    {
        var logs = new FakeLogCollector();
        await using var app = AdminServer.Build(logs, anonymous: true);
        app.MapBoundedWorkAdmin("/second-console").RequireHost("admin.example");
        await app.StartAsync();
        using var client = new HttpClient { BaseAddress = new Uri(app.Urls.Single()) };

        Assert.Equal(HttpStatusCode.NotFound, (await client.GetAsync("/second-console/executors")).StatusCode);
        await app.StopAsync();
    }
}
