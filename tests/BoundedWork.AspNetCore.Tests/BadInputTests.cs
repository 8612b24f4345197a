using System.Net;

namespace BoundedWork.AspNetCore.Tests;

/// <summary>Every bad request gets a problem details response naming the field, and changes nothing.</summary>
public sealed class BadInputTests : IAsyncLifetime
{
    private const string Workers = "/bounded-work/executors/payments/workers";
    private const string Settings = "/bounded-work/executors/payments";

    private AdminServer _server = null!;
    private BoundedExecutorSettings _before = null!;

    public async Task InitializeAsync()
    {
        _server = await AdminServer.StartAsync();
        _before = _server.Payments.Settings;
    }

    public async Task DisposeAsync() => await _server.DisposeAsync();

    public static TheoryData<string, string?, string> InvalidBodies => new()
    {
        // path, body, the field (or "body") the problem must name
        { Workers, "", "body" },
        { Settings, "", "body" },
        { Workers, "{\"workers\": ", "body" },
        { Settings, "{workers: 8}", "body" },
        { Workers, "[8]", "body" },
        { Settings, "{} {}", "body" },
        { Settings, "{}", "body" },
        { Workers, "{}", "workers" },
        { Workers, """{"workers": "eight"}""", "workers" },
        { Workers, """{"workers": null}""", "workers" },
        { Workers, """{"workers": 2.5}""", "workers" },
        { Settings, """{"queueCapacity": true}""", "queueCapacity" },
        { Settings, """{"rejectionPolicy": 3}""", "rejectionPolicy" },
        { Settings, """{"waitTimeout": 5000}""", "waitTimeout" },
        { Workers, """{"workers": 4, "queueCapacity": 10}""", "queueCapacity" },
        { Settings, """{"workers": 4, "speed": "fast"}""", "speed" },
        { Settings, """{"workers": 4, "workers": 5}""", "workers" },
        { Workers, """{"workers": 0}""", "workers" },
        { Settings, """{"workers": 0}""", "workers" },
        { Workers, """{"workers": -3}""", "workers" },
        { Settings, """{"queueCapacity": 0}""", "queueCapacity" },
        { Settings, """{"queueCapacity": -1}""", "queueCapacity" },
        { Workers, """{"workers": 9}""", "workers" },
        { Settings, """{"workers": 4097}""", "workers" },
        { Workers, """{"workers": 2147483648}""", "workers" },
        { Settings, """{"queueCapacity": 99999999999999999999}""", "queueCapacity" },
        { Settings, """{"workers": 1e20}""", "workers" },
        { Settings, """{"rejectionPolicy": "Fastest"}""", "rejectionPolicy" },
        { Settings, """{"rejectionPolicy": "4"}""", "rejectionPolicy" },
        { Settings, """{"waitTimeout": "soon"}""", "waitTimeout" },
        { Settings, """{"waitTimeout": "-00:00:01"}""", "waitTimeout" },
        { Settings, """{"waitTimeout": "00:00:00"}""", "waitTimeout" },
        // All or nothing: one bad field and the good ones are not applied either.
        { Settings, """{"workers": 5, "queueCapacity": 500, "rejectionPolicy": "Sometimes"}""", "rejectionPolicy" },
    };

    [Theory]
    [MemberData(nameof(InvalidBodies))]
    public async Task Change_InvalidBody_Returns400ProblemNamingFieldAndChangesNothing(string path, string? body, string field)
    {
        var method = path == Workers ? HttpMethod.Put : HttpMethod.Patch;

        using var response = await _server.Client.SendChangeAsync(method, path, body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field);
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out var messages), $"No error for '{field}': {problem}");
        Assert.NotEmpty(messages.EnumerateArray());
        AssertUnchanged();
    }

    public static TheoryData<string, byte[], string> MalformedTextBodies => new()
    {
        // path, body, the field (or "body") the problem must name. A field name that is not text cannot be named.
        { Settings, [.. "{\""u8, 0xFF, 0xFE, .. "\":1}"u8], "body" },
        { Settings, [.. "{\"rejectionPolicy\":\"Wa"u8, 0xFF, .. "t\"}"u8], "rejectionPolicy" },
        { Settings, [.. "{\"adaptiveMode\":\"O"u8, 0xFF, .. "n\"}"u8], "adaptiveMode" },
        { Settings, "{\"adaptiveMode\":\"\\uD800\"}"u8.ToArray(), "adaptiveMode" },
        { Settings, [.. "{\"workers\":3,\"waitTimeout\":\"00:00:0"u8, 0xC3, .. "\"}"u8], "waitTimeout" },
        { Settings, [.. "{\"slowItemThreshold\":\""u8, 0xED, 0xA0, 0x80, .. "\"}"u8], "slowItemThreshold" },
        { Settings, "{\"queueWaitThreshold\":\"\\uD800\"}"u8.ToArray(), "queueWaitThreshold" },
        { Settings, "{\"\\uDC00\":1}"u8.ToArray(), "body" },
        { Workers, [.. "{\"work"u8, 0x80, .. "ers\":4}"u8], "body" },
    };

    [Theory]
    [MemberData(nameof(MalformedTextBodies))]
    public async Task Change_MalformedUtf8OrSurrogate_Returns400ProblemNamingFieldLoggedAndCounted(string path, byte[] body, string field)
    {
        var method = path == Workers ? HttpMethod.Put : HttpMethod.Patch;
        using var recorder = new AdminMeterRecorder(_server.App.Services);

        using var response = await _server.Client.SendRawChangeAsync(method, path, body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field);
        Assert.True(problem.GetProperty("errors").TryGetProperty(field, out var messages), $"No error for '{field}': {problem}");
        if (field != "body")
        {
            // Every field says the same of text that is not text, whatever the field takes (a name, a duration).
            Assert.Equal($"{field} is not valid UTF-8 text.", messages[0].GetString());
        }

        var refusal = Assert.Single(_server.Logs.WithEvent("SettingsChangeRefused"));
        Assert.Equal("400", refusal.GetStructuredStateValue("StatusCode"));
        Assert.Equal("invalid", refusal.GetStructuredStateValue("Reason"));
        Assert.Equal([("boundedwork.admin.refused", 1L, "payments", "invalid")], recorder.Measurements);
        AssertUnchanged();
    }

    [Theory]
    [InlineData("CallerRuns,Discard")]
    [InlineData("Wait,Abort")]
    [InlineData("Wait, Abort")]
    [InlineData("3")]
    [InlineData("+3")]
    [InlineData("Wait ")]
    [InlineData(" Wait")]
    [InlineData("")]
    public async Task PatchRejectionPolicy_NotExactlyOneName_Returns400NamingTheField(string policy)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, $$"""{"rejectionPolicy": "{{policy}}"}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "rejectionPolicy");
        Assert.Contains("Abort, CallerRuns, Discard, DiscardOldest, Wait", problem.GetProperty("errors").GetProperty("rejectionPolicy")[0].GetString(), StringComparison.Ordinal);
        AssertUnchanged();
    }

    [Theory]
    [InlineData("wait", RejectionPolicy.Wait)]
    [InlineData("CALLERRUNS", RejectionPolicy.CallerRuns)]
    [InlineData("DiscardOldest", RejectionPolicy.DiscardOldest)]
    public async Task PatchRejectionPolicy_NameInAnyCase_Applies(string policy, RejectionPolicy expected)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, $$"""{"rejectionPolicy": "{{policy}}"}""");

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(expected, _server.Payments.Settings.RejectionPolicy);
    }

    [Theory]
    [InlineData("waitTimeout", "5")]
    [InlineData("waitTimeout", "00:05")]
    [InlineData("waitTimeout", "0:0:5")]
    [InlineData("waitTimeout", "0:00:05")]
    [InlineData("waitTimeout", "00:00:05 ")]
    [InlineData("waitTimeout", " 00:00:05")]
    [InlineData("waitTimeout", "PT5S")]
    [InlineData("waitTimeout", "1:00:00:00")]
    [InlineData("waitTimeout", "00:00:05.12345678")]
    [InlineData("waitTimeout", "00:00:05.")]
    [InlineData("slowItemThreshold", "30")]
    [InlineData("queueWaitThreshold", "00:00:05,5")]
    public async Task PatchDuration_NotTheOneFormat_Returns400NamingFieldAndFormat(string field, string value)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, $$"""{"{{field}}": "{{value}}"}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field);
        Assert.Contains("hh:mm:ss", problem.GetProperty("errors").GetProperty(field)[0].GetString(), StringComparison.Ordinal);
        AssertUnchanged();
    }

    [Theory]
    [InlineData("""{"queueCapacity": 2147483647}""", "queueCapacity", "1000000")]
    [InlineData("""{"queueCapacity": 1000001}""", "queueCapacity", "1000000")]
    [InlineData("""{"waitTimeout": "00:00:00.0009999"}""", "waitTimeout", "00:00:00.001")]
    [InlineData("""{"waitTimeout": "1.00:00:00.0000001"}""", "waitTimeout", "1.00:00:00")]
    [InlineData("""{"waitTimeout": "10675199.02:48:05.4775807"}""", "waitTimeout", "1.00:00:00")]
    [InlineData("""{"waitTimeout": "-1.00:00:00"}""", "waitTimeout", "00:00:00.001")]
    [InlineData("""{"slowItemThreshold": "00:00:00.0000001"}""", "slowItemThreshold", "00:00:00.1")]
    [InlineData("""{"slowItemThreshold": "00:00:00.099"}""", "slowItemThreshold", "00:00:00.1")]
    [InlineData("""{"slowItemThreshold": "2.00:00:00"}""", "slowItemThreshold", "1.00:00:00")]
    [InlineData("""{"queueWaitThreshold": "00:00:00.009"}""", "queueWaitThreshold", "00:00:00.01")]
    [InlineData("""{"queueWaitThreshold": "1.00:00:01"}""", "queueWaitThreshold", "1.00:00:00")]
    public async Task PatchSetting_OutsideItsRange_Returns400NamingFieldAndRange(string body, string field, string bound)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field);
        Assert.Contains(bound, problem.GetProperty("errors").GetProperty(field)[0].GetString(), StringComparison.Ordinal);
        AssertUnchanged();
    }

    [Theory]
    [InlineData("""{"queueCapacity": 1000000}""")]
    [InlineData("""{"queueCapacity": 1}""")]
    [InlineData("""{"waitTimeout": "00:00:00.001"}""")]
    [InlineData("""{"waitTimeout": "1.00:00:00"}""")]
    [InlineData("""{"waitTimeout": "00:00:05.5"}""")]
    [InlineData("""{"waitTimeout": "INFINITE"}""")]
    [InlineData("""{"slowItemThreshold": "00:00:00.1"}""")]
    [InlineData("""{"slowItemThreshold": "1.00:00:00"}""")]
    [InlineData("""{"queueWaitThreshold": "00:00:00.0100000"}""")]
    [InlineData("""{"queueWaitThreshold": "23:59:59.9999999"}""")]
    public async Task PatchSetting_AtTheEdgeOfItsRange_Applies(string body)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, body);

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
    }

    [Fact]
    public async Task Change_AboveHardMaximum_MessageNamesTheMaximum()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Put, Workers, """{"workers": 9}""");

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "MaxWorkerCount (8)");
        Assert.Contains("was 9", problem.GetProperty("errors").GetProperty("workers")[0].GetString(), StringComparison.Ordinal);
        AssertUnchanged();
    }

    [Theory]
    [InlineData("PUT", "/bounded-work/executors/nope/workers")]
    [InlineData("PATCH", "/bounded-work/executors/nope")]
    public async Task Change_UnknownExecutor_Returns404(string method, string path)
    {
        using var response = await _server.Client.SendChangeAsync(new HttpMethod(method), path, """{"workers": 4}""");

        await AdminApiTests.AssertProblem(response, HttpStatusCode.NotFound, "nope");
        AssertUnchanged();
    }

    [Theory]
    [InlineData("POST", "/bounded-work/executors", "GET, HEAD")]
    [InlineData("DELETE", "/bounded-work/executors/payments", "GET, HEAD, PATCH")]
    [InlineData("PUT", "/bounded-work/executors/payments", "GET, HEAD, PATCH")]
    [InlineData("GET", "/bounded-work/executors/payments/workers", "PUT")]
    [InlineData("HEAD", "/bounded-work/executors/payments/workers", "PUT")]
    [InlineData("POST", "/bounded-work/executors/payments/workers", "PUT")]
    [InlineData("PATCH", "/bounded-work/executors/payments/workers", "PUT")]
    [InlineData("POST", "/bounded-work/threadpool", "GET, HEAD")]
    [InlineData("DELETE", "/bounded-work/", "GET, HEAD")]
    [InlineData("OPTIONS", "/bounded-work/executors", "GET, HEAD")]
    [InlineData("TRACE", "/bounded-work/", "GET, HEAD")]
    [InlineData("FOO", "/bounded-work/executors/payments", "GET, HEAD, PATCH")]
    [InlineData("PROPFIND", "/bounded-work/executors/payments/workers", "PUT")]
    public async Task WrongMethod_Returns405ProblemWithAllowHeader(string method, string path, string allow)
    {
        using var response = await _server.Client.SendChangeAsync(new HttpMethod(method), path, method is "GET" or "HEAD" ? null : """{"workers": 4}""");

        Assert.Equal(allow, string.Join(", ", response.Content.Headers.Allow));
        if (method != "HEAD")
        {
            await AdminApiTests.AssertProblem(response, HttpStatusCode.MethodNotAllowed, method);
        }
        else
        {
            Assert.Equal(HttpStatusCode.MethodNotAllowed, response.StatusCode);
        }

        AssertUnchanged();
    }

    [Theory]
    [InlineData("/bounded-work/")]
    [InlineData("/bounded-work/executors")]
    [InlineData("/bounded-work/executors/payments")]
    [InlineData("/bounded-work/executors/payments/workers")]
    [InlineData("/bounded-work/threadpool")]
    public async Task WrongMethod_EveryMethodTheAllowHeaderLists_IsNotItself405(string path)
    {
        using var refused = await _server.Client.SendChangeAsync(HttpMethod.Options, path, null);
        var allowed = refused.Content.Headers.Allow.ToList();

        Assert.NotEmpty(allowed);
        foreach (var method in allowed)
        {
            using var response = await _server.Client.SendChangeAsync(new HttpMethod(method), path, method is "PUT" or "PATCH" ? """{"workers": 2}""" : null);
            Assert.True(response.StatusCode != HttpStatusCode.MethodNotAllowed, $"{method} {path} is listed in Allow but answered 405.");
        }
    }

    [Theory]
    [InlineData("/bounded-work/", "text/html")]
    [InlineData("/bounded-work/executors", "application/json")]
    [InlineData("/bounded-work/executors/payments", "application/json")]
    [InlineData("/bounded-work/threadpool", "application/json")]
    public async Task Head_OnAGetEndpoint_AnswersLikeGetWithoutABody(string path, string mediaType)
    {
        using var response = await _server.Client.SendAsync(new HttpRequestMessage(HttpMethod.Head, path));

        Assert.Equal(HttpStatusCode.OK, response.StatusCode);
        Assert.Equal(mediaType, response.Content.Headers.ContentType?.MediaType);
        Assert.Empty(await response.Content.ReadAsByteArrayAsync());
    }

    [Fact]
    public async Task Change_ThousandsOfUnknownFields_AnswersABoundedListAndTheCount()
    {
        var body = "{" + string.Join(",", Enumerable.Range(0, 1500).Select(i => $"\"f{i}\":1")) + "}";

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, body);

        var problem = await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, "f0");
        Assert.Equal(20, problem.GetProperty("errors").EnumerateObject().Count());
        Assert.Equal(1500, problem.GetProperty("errorCount").GetInt32());
        Assert.Contains("1480 more", problem.GetProperty("detail").GetString(), StringComparison.Ordinal);
        Assert.True(response.Content.Headers.ContentLength < 8 * 1024, $"The answer is {response.Content.Headers.ContentLength} bytes.");
        AssertUnchanged();
    }

    [Theory]
    [InlineData("{\"$LONG\": 1}", "$LONG")]
    [InlineData("{\"rejectionPolicy\": \"$LONG\"}", "rejectionPolicy")]
    [InlineData("{\"waitTimeout\": \"$LONG\"}", "waitTimeout")]
    [InlineData("{\"queueCapacity\": 1$DIGITS}", "queueCapacity")]
    [InlineData("{\"$LONG\": [", "body")]
    public async Task Change_HugeNameOrValue_EchoedShortened(string template, string field)
    {
        var body = template
            .Replace("$LONG", new string('x', 15_000), StringComparison.Ordinal)
            .Replace("$DIGITS", new string('9', 15_000), StringComparison.Ordinal);

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, body);

        await AdminApiTests.AssertProblem(response, HttpStatusCode.BadRequest, field == "$LONG" ? "xxxx..." : field);
        Assert.True(response.Content.Headers.ContentLength < 2 * 1024, $"The answer is {response.Content.Headers.ContentLength} bytes.");
        AssertUnchanged();
    }

    [Theory]
    [InlineData("GET", "/bounded-work/executors", null, HttpStatusCode.OK)]
    [InlineData("GET", "/bounded-work/threadpool", null, HttpStatusCode.OK)]
    [InlineData("GET", "/bounded-work/executors/nope", null, HttpStatusCode.NotFound)]
    [InlineData("PUT", "/bounded-work/executors/payments/workers", """{"workers": 3}""", HttpStatusCode.OK)]
    [InlineData("PUT", "/bounded-work/executors/payments/workers", """{"workers": 0}""", HttpStatusCode.BadRequest)]
    [InlineData("POST", "/bounded-work/executors", "{}", HttpStatusCode.MethodNotAllowed)]
    [InlineData("OPTIONS", "/bounded-work/executors", null, HttpStatusCode.MethodNotAllowed)]
    public async Task JsonAnswer_AnyStatus_CarriesNoSniff(string method, string path, string? body, HttpStatusCode status)
    {
        using var response = await _server.Client.SendChangeAsync(new HttpMethod(method), path, body);

        Assert.Equal(status, response.StatusCode);
        Assert.Equal("nosniff", response.Headers.GetValues("X-Content-Type-Options").Single());
    }

    [Theory]
    [InlineData("text/plain")]
    [InlineData("application/x-www-form-urlencoded")]
    [InlineData("multipart/form-data; boundary=x")]
    [InlineData("application/xml")]
    public async Task Change_NonJsonContentType_Returns415(string contentType)
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Put, Workers, """{"workers": 4}""", contentType);

        await AdminApiTests.AssertProblem(response, HttpStatusCode.UnsupportedMediaType, "application/json");
        AssertUnchanged();
    }

    [Fact]
    public async Task Change_NoContentTypeNoBody_Returns415()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Patch, Settings, json: null);

        await AdminApiTests.AssertProblem(response, HttpStatusCode.UnsupportedMediaType, "application/json");
        AssertUnchanged();
    }

    [Fact]
    public async Task Change_ExecutorShutDown_Returns409AndChangesNothing()
    {
        var mail = _server.Executor("mail");
        var before = mail.Settings;
        await mail.ShutdownAsync();

        using var put = await _server.Client.SendChangeAsync(HttpMethod.Put, "/bounded-work/executors/mail/workers", """{"workers": 3}""");
        using var patch = await _server.Client.SendChangeAsync(HttpMethod.Patch, "/bounded-work/executors/mail", """{"queueCapacity": 30}""");

        await AdminApiTests.AssertProblem(put, HttpStatusCode.Conflict, "mail");
        await AdminApiTests.AssertProblem(patch, HttpStatusCode.Conflict, "mail");
        Assert.Equal(before, mail.Settings);
    }

    [Fact]
    public async Task Change_BodyTooLarge_Returns413()
    {
        var body = "{\"workers\": 4" + new string(' ', 20_000) + "}";

        using var response = await _server.Client.SendChangeAsync(HttpMethod.Put, Workers, body);

        await AdminApiTests.AssertProblem(response, HttpStatusCode.RequestEntityTooLarge, "body");
        AssertUnchanged();
    }

    [Fact]
    public async Task Change_Refused_LoggedAndCounted()
    {
        using var response = await _server.Client.SendChangeAsync(HttpMethod.Put, Workers, """{"workers": 0}""");

        var entry = Assert.Single(_server.Logs.WithEvent("SettingsChangeRefused"));
        Assert.Equal(201, entry.Id.Id);
        Assert.Equal("alice", entry.GetStructuredStateValue("User"));
        Assert.Equal("400", entry.GetStructuredStateValue("StatusCode"));
    }

    private void AssertUnchanged()
    {
        Assert.Equal(_before, _server.Payments.Settings);
        Assert.Empty(_server.Logs.WithEvent("SettingsChanged"));
    }
}
